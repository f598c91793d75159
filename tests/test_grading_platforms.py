"""Grades into Canvas and Moodle as they import them (issue 28): ``export --canvas`` fills
a Canvas gradebook export in place, ``export --moodle`` writes Moodle's grade-import CSV.

The workspace is a gradebook built with nbgrader's API (no kernel, no nbgrader run) and the
side table of a grading run; the Canvas file is laid out as Canvas's gradebook export is
(a byte order mark, CRLF line ends, the header ``Student,ID,SIS User ID,SIS Login ID,
Section,<name (id)>...``, the ``Points Possible`` row, quoted names, read-only columns).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import sys
from datetime import datetime, timedelta

import pytest

from autograder import cli
from autograder.grading.canvas import split, unquote
from autograder.grading.gradebook import open_gradebook
from autograder.grading.results import Row, Status, save_state

DUE = datetime(2026, 3, 1, 17, 0)
# student -> assignment -> (test scores, hours late); graded by nbgrader.
SCORED = {"alice": {"exA": ((3, 2), -1), "exB": ((4,), -1)},
          "bob": {"exA": ((3, 1), 2), "exB": ((5,), -1)},
          "dave": {"exA": ((3, 2), -1)}, "erin": {"exA": ((2, 0), -1)}}
CELLS = {"exA": (("test_a", 3), ("test_b", 2)), "exB": (("test_c", 5),)}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """alice graded, bob 2 h late on exA (penalty: zero), carol's exA invalid and her exB
    an error of the grader, dave and erin graded on exA only."""
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    ws = tmp_path_factory.mktemp("platforms") / "ws"
    ws.mkdir()
    rows = {}
    with open_gradebook(ws) as gb:
        for a, cells in CELLS.items():
            gb.add_assignment(a, duedate=DUE)
            gb.add_notebook(a, a)
            for name, points in cells:
                gb.add_grade_cell(name, a, a, max_score=points, cell_type="code")
        for student, done in SCORED.items():
            gb.add_student(student)
            for a, (scores, late) in done.items():
                nb = gb.add_submission(a, student, timestamp=DUE + timedelta(hours=late)).notebooks[0]
                for g, score in zip(sorted(nb.grades, key=lambda g: g.name), scores):
                    g.auto_score, g.needs_manual_grade = score, False
                if late > 0:
                    nb.late_submission_penalty = sum(scores)
                rows[(student, a)] = Row(student, a, status=Status.GRADED, scored=True)
        gb.db.commit()
    rows[("carol", "exA")] = Row("carol", "exA", status=Status.INVALID_NOTEBOOK,
                                 detail="not valid JSON")
    rows[("carol", "exB")] = Row("carol", "exB", status=Status.ERROR,
                                 detail="nbgrader failed: disk full")
    save_state(ws, rows)
    return ws


def _grades(ws):
    """(student, assignment) -> (score, status) of grades.csv."""
    with (ws / "grades.csv").open(encoding="utf-8") as f:
        return {(r["student_id"], r["assignment"]): (float(r["score"]), r["status"])
                for r in csv.DictReader(f)}


HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Quiz 1 (555)",
          "exA (1201)", "Exercise B (1202)", "Current Score", "Unposted Current Score",
          "Final Score"]
CANVAS = [  # Canvas's gradebook export: the learners' rows after "Points Possible"
    ["    Points Possible", "", "", "", "", "10.00", "5.00", "5.00", "(read only)",
     "(read only)", "(read only)"],
    ["Smith, Alice", "101", "S001", "alice", "Section A, Monday", "9.00", "", "", "90.00",
     "90.00", "90.00"],
    ["Jones, Bob", "102", "bob", "bjones", "Section A, Monday", "7.50", "3.00", "", "75",
     "75", "75"],
    ["Brown, Carol", "103", "S003", "carol", "Section \"B\"", "", "", "2.00", "", "", ""],
    ["Green, Dave", "104", "S004", "DAVE", "Section B", "", "", "", "", "", ""],
    ["White, Erin", "105", "S005", "erin", "Section B", "", "", "", "", "", ""],
    ["White, Erin (2nd account)", "106", "erin", "ewhite2", "Section B", "", "", "", "",
     "", ""],
    ["Black, Frank", "107", "S007", "frank", "Section B", "", "", "", "", "", ""],
    ["Student, Test", "108", "", "", "", "", "", "", "", "", ""],
]


def _canvas_bytes() -> bytes:
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\r\n")  # quoted only where needed, as Canvas
    w.writerows([HEADER, *CANVAS])
    # Quoted where csv would not quote, and no line end at the end: a file rewritten
    # through csv.writer differs from it there.
    text = buf.getvalue().replace(",frank,Section B,", ',frank,"Section B",').removesuffix("\r\n")
    return ("\ufeff" + text).encode("utf-8")


@pytest.fixture
def canvas_run(workspace, tmp_path, capsys):
    src = tmp_path / "Grades-ATT101.csv"
    src.write_bytes(_canvas_bytes())
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    out = tmp_path / "filled.csv"
    code = cli.main(["export", "--workspace", str(workspace), "--canvas", str(src),
                     "--column", "exB=Exercise B", "--out", str(out)])
    err = capsys.readouterr()
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before, "the input changed"
    return code, err, src, out


def test_canvas_changes_only_the_assignment_cells_of_matched_learners(canvas_run, workspace):
    code, err, src, out = canvas_run
    old, new = split(src.read_text(encoding="utf-8")), split(out.read_text(encoding="utf-8"))
    assert out.read_bytes().startswith("\ufeff".encode()) and b"\r\n" in out.read_bytes()
    assert [end for _, end in new] == [end for _, end in old] and old[-1][1] == ""
    assert new[8][0][4] == '"Section B"'
    changed = {(i, j) for i, ((a, _), (b, _)) in enumerate(zip(old, new))
               for j, (x, y) in enumerate(zip(a, b)) if x != y}
    # alice, bob, carol (exA), frank; exA and Exercise B (columns 6, 7). Not the test
    # student's row (no SIS id: no learner of the grader's)
    assert changed == {(2, 6), (2, 7), (3, 6), (3, 7), (4, 6), (8, 6), (8, 7)}
    assert len(new) == len(old) and all(len(a) == len(b) for (a, _), (b, _) in zip(old, new))


def test_canvas_scores_are_those_of_grades_csv(canvas_run, workspace):
    code, err, src, out = canvas_run
    grades = _grades(workspace)
    with out.open(encoding="utf-8-sig", newline="") as f:
        filled = {r["SIS Login ID"]: r for r in csv.DictReader(f)}
    for student, login in (("alice", "alice"), ("bob", "bjones"), ("carol", "carol")):
        for a, column in (("exA", "exA (1201)"), ("exB", "Exercise B (1202)")):
            score, status = grades[(student, a)]
            if status == "error":  # not a grade yet: left as it was
                assert filled[login][column] == "2.00", (student, a)
            else:
                assert float(filled[login][column]) == score, (student, a, status)
    assert grades[("bob", "exA")] == (0.0, "late")  # the late penalty, honoured
    assert grades[("carol", "exA")] == (0.0, "invalid-notebook")
    assert (filled["frank"]["exA (1201)"], filled["frank"]["Exercise B (1202)"]) == ("0", "0")
    assert filled["alice"]["exA (1201)"] == "5" and filled["alice"]["Exercise B (1202)"] == "4"
    for login in ("DAVE", "erin", "ewhite2", ""):  # unmatched, ambiguous, no SIS id: untouched
        assert (filled[login]["exA (1201)"], filled[login]["Exercise B (1202)"]) == ("", "")


def test_canvas_lists_the_unmatched_and_the_ambiguous(canvas_run):
    code, err, src, out = canvas_run
    assert code == 1
    lines = err.err.splitlines()
    assert ("unmatched, not in the file: 'dave': no row with that SIS login or SIS user id "
            "(the row 'Green, Dave' (ID 104, SIS Login ID 'DAVE', SIS User ID 'S004') differs "
            "only in case: left as it was)") in lines
    assert any(ln.startswith("ambiguous, not filled: student id 'erin' matches 2 rows: "
                             "'White, Erin' (ID 105") for ln in lines), lines
    assert ("not a grade yet, no score written: carol exB: error: nbgrader failed: disk full"
            in lines)
    assert ("warning: assignment exA: Canvas has 5 points possible, the grader's maximum is "
            "5") not in err.err
    assert ("warning: row 'Student, Test' (ID 108) has no SIS User ID or SIS Login ID: left "
            "as it was") in lines
    assert err.out.strip() == f"7 cell(s) filled (2 missing: 0) in {out}"


def test_canvas_refuses_what_it_cannot_fill_and_writes_nothing(workspace, tmp_path, capsys):
    src = tmp_path / "gradebook.csv"
    src.write_bytes(_canvas_bytes())
    args = ["export", "--workspace", str(workspace), "--canvas", str(src)]
    assert cli.main(args + ["--out", str(src)]) == 2
    assert "is the Canvas file itself: it is never changed" in capsys.readouterr().err
    assert cli.main(args + ["--column", "exZ=Exercise Z", "--out", str(tmp_path / "o.csv")]) == 2
    assert "--column names assignments the workspace does not have: exZ" in capsys.readouterr().err
    assert cli.main(args + ["--column", "exB", "--out", str(tmp_path / "o.csv")]) == 2
    assert "--column 'exB' is not ASSIGNMENT=NAME" in capsys.readouterr().err
    plain = tmp_path / "plain.csv"
    plain.write_text("student_id,score\nalice,5\n")
    assert cli.main(["export", "--workspace", str(workspace), "--canvas", str(plain),
                     "--out", str(tmp_path / "o.csv")]) == 2
    assert "not a Canvas gradebook export: its header has no 'Student' or 'ID' column" in (
        capsys.readouterr().err)
    assert not (tmp_path / "o.csv").exists()
    # A column Canvas names twice is ambiguous: neither is filled.
    twice = tmp_path / "twice.csv"
    twice.write_text("Student,ID,SIS User ID,SIS Login ID,Section,exA (1),exA (2)\n"
                     "    Points Possible,,,,,5,5\nSmith,1,,alice,,,\n")
    assert cli.main(["export", "--workspace", str(workspace), "--canvas", str(twice),
                     "--out", str(tmp_path / "t.csv")]) == 1
    assert "assignment exA: 2 columns are named 'exA' (exA (1), exA (2)); none filled" in (
        capsys.readouterr().err)
    assert (tmp_path / "t.csv").read_text().splitlines()[2] == "Smith,1,,alice,,,"


def test_split_gives_back_the_bytes_and_agrees_with_csv():
    text = '\ufeffa,"b, ""c""",\r\n"multi\nline",2,\n\nx,y,z'
    records = split(text)
    assert "".join(",".join(f) + end for f, end in records) == text
    assert [unquote(f) for f in records[0][0]] == ["\ufeffa", 'b, "c"', ""]
    with pytest.raises(ValueError, match="line 1 is not CSV"):
        split('a,b"c\n')


# -- Moodle ----------------------------------------------------------------------------


def _moodle(workspace, tmp_path, capsys, *extra):
    out = tmp_path / "moodle.csv"
    code = cli.main(["export", "--workspace", str(workspace), *extra, "--out", str(out)])
    with out.open(encoding="utf-8", newline="") as f:
        return code, capsys.readouterr(), list(csv.reader(f))


def test_moodle_file_keyed_on_the_roster_email(workspace, tmp_path, capsys):
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,email,idnumber\nalice,alice@uni.example,S001\n"
                      "bob,bob@uni.example,S002\ncarol,carol@uni.example,S003\n"
                      "erin,erin@uni.example,S005\nerin,erin.white@uni.example,S005\n"
                      "frank,frank@uni.example,S007\ngus,shared@uni.example,S008\n"
                      "hal,shared@uni.example,S009\nivy,,S010\n")
    code, err, rows = _moodle(workspace, tmp_path, capsys, "--moodle", "email",
                              "--roster", str(roster))
    grades = _grades(workspace)
    assert rows[0] == ["email", "exA", "exB"]
    assert rows[1:] == [["alice@uni.example", "5", "4"], ["bob@uni.example", "0", "5"],
                        ["carol@uni.example", "0", ""], ["frank@uni.example", "0", "0"]]
    for line, student in zip(rows[1:4], ("alice", "bob", "carol")):
        for a, cell in zip(("exA", "exB"), line[1:]):
            score, status = grades[(student, a)]
            assert cell == "" if status == "error" else float(cell) == score, (student, a)
    assert code == 1
    lines = err.err.splitlines()
    assert "unmatched, not in the file: 'dave': graded, not on the roster " + str(roster) in lines
    assert f"unmatched, not in the file: 'ivy': no email in the roster {roster}" in lines
    assert ("ambiguous, not filled: 'erin' has 2 email values in the roster: "
            "erin.white@uni.example, erin@uni.example; left out") in lines
    assert ("ambiguous, not filled: 'gus': its email 'shared@uni.example' is also that of hal; "
            "left out") in lines
    assert "not a grade yet, no score written: carol exB: error: nbgrader failed: disk full" in lines


def test_moodle_without_a_roster_keys_on_the_student_id(workspace, tmp_path, capsys):
    code, err, rows = _moodle(workspace, tmp_path, capsys, "--moodle", "username")
    assert code == 0, err.err
    assert [r[0] for r in rows] == ["username", "alice", "bob", "carol", "dave", "erin"]
    assert rows[4] == ["dave", "5", "0"]  # no exB submission: missing, 0
    assert json.dumps(rows[3]) == json.dumps(["carol", "0", ""])


def test_moodle_refuses_a_field_it_does_not_import_by(workspace, tmp_path, capsys):
    assert cli.main(["export", "--workspace", str(workspace), "--moodle", "mail"]) == 2
    assert ("--moodle 'mail': Moodle's grade import identifies users by id, idnumber, email or "
            "username") in capsys.readouterr().err
    roster = tmp_path / "r.csv"
    roster.write_text("student_id,name\nalice,Alice\n")
    assert cli.main(["export", "--workspace", str(workspace), "--moodle", "email",
                     "--roster", str(roster), "--out", str(tmp_path / "m.csv")]) == 2
    assert "has no 'email' column (it has 'student_id', 'name')" in capsys.readouterr().err
    assert not (tmp_path / "m.csv").exists()


ODD = ["DOMAIN\\user", "a b", ".hidden", "-dash", "x" * 129]  # folders the door refuses


@pytest.fixture(scope="module")
def odd_workspace(workspace, tmp_path_factory):
    """The workspace, plus exA rows of folders whose names cannot be student ids and of
    gina's folder with several notebooks (as the door records them)."""
    import shutil

    from autograder.grading import ids
    from autograder.grading.results import load_state

    ws = tmp_path_factory.mktemp("odd") / "ws"
    shutil.copytree(workspace, ws)
    rows = load_state(ws)
    for folder in ODD:
        rows[(folder, "exA")] = Row(folder, "exA", status=Status.INVALID_STUDENT_ID,
                                    detail=ids.refusal(folder, f"submitted/{folder}"))
    rows[("gina", "exA")] = Row("gina", "exA", status=Status.SEVERAL_NOTEBOOKS,
                                detail="a.ipynb, b.ipynb; 2 of them are notebooks")
    save_state(ws, rows)
    return ws


def test_moodle_leaves_out_folders_that_cannot_be_learners(odd_workspace, tmp_path, capsys):
    code, err, rows = _moodle(odd_workspace, tmp_path, capsys, "--moodle", "username")
    assert [r[0] for r in rows] == ["username", "alice", "bob", "carol", "dave", "erin", "gina"]
    assert rows[-1] == ["gina", "", "0"]  # several notebooks: no grade yet; exB missing: 0
    lines = err.err.splitlines()
    for folder in ODD:
        assert any(ln.startswith(f"unmatched, not in the file: {folder!r}: not a student id (")
                   for ln in lines), (folder, lines)
    assert code == 1


def test_moodle_never_writes_a_value_that_starts_as_a_formula(workspace, tmp_path, capsys):
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,idnumber\nalice,=1+2\nbob,+1-2\ncarol,-cmd\n"
                      "dave,@SUM(1)\nerin,S005\n")
    code, err, rows = _moodle(workspace, tmp_path, capsys, "--moodle", "idnumber",
                              "--roster", str(roster))
    assert rows == [["idnumber", "exA", "exB"], ["S005", "2", "0"]]
    assert code == 1
    lines = err.err.splitlines()
    for student, value in (("alice", "=1+2"), ("bob", "+1-2"), ("carol", "-cmd"),
                           ("dave", "@SUM(1)")):
        assert (f"unmatched, not in the file: {student!r}: its idnumber {value!r} starts "
                f"with {value[0]!r}, which a spreadsheet reads as a formula; left out (never "
                "written as it is, never altered)") in lines, lines


def test_grades_csv_and_the_export_give_the_same_maximum(odd_workspace, tmp_path, capsys):
    out = tmp_path / "export.csv"
    assert cli.main(["export", "--workspace", str(odd_workspace), "--out", str(out)]) == 0
    capsys.readouterr()
    with out.open(encoding="utf-8") as f:
        exported = {(r["student_id"], r["assignment"]): r["max_score"] for r in csv.DictReader(f)}
    with (odd_workspace / "grades.csv").open(encoding="utf-8") as f:
        graded = {(r["student_id"], r["assignment"]): r["max_score"] for r in csv.DictReader(f)}
    for folder in ODD:  # escaped alike in both files where a spreadsheet would run it
        key = next(k for k in graded if k[0].lstrip("'") == folder)
        assert float(graded[key]) == float(exported[key]) == 5.0, (folder, graded[key])
    assert float(graded[("gina", "exA")]) == float(exported[("gina", "exA")]) == 5.0
    assert float(graded[("carol", "exA")]) == float(exported[("carol", "exA")]) == 5.0
    assert {k: float(v) for k, v in graded.items()} == {
        k: float(v) for k, v in exported.items() if k in graded}
