"""The instructors page (``instructors.md``) walked through, command by command, on a small
class (issue 12): collect two zips with ``nbgrader zip_collect``, set a due date, grade, move
the due date, fix a hidden test, grade again, grade the written answers with ``manual``,
regenerate feedback and export, asserting the values after every step and that grading
never changed a submitted file.

Each command run here is copied from the page (the test fails if the page no longer has
it), with only the sample values (assignment id, date, file names) changed. It runs in a
course folder of its own whose ``nbgrader_config.py`` is the repository's with the
workspace in that folder, and with a copy of the exercise sources
(``$AUTOGRADER_SOLUTIONS``) in which one hidden test of ex01 is wrong until the "fix".
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import zipfile

import nbformat
import pytest
from conftest import REPO
from submissions import filled_notebook, parse_variant, variants

from autograder.notebook import nbgrader_meta

A, B = "ex01_python_attention", "ex03_scaling"
BROKEN = "test_softmax_stable"  # its hidden part wrongly fails for everyone until fixed
BUG = '    assert False, "a wrong hidden check"\n'
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("workflow")]
PAGE = (REPO / "instructors.md").read_text(encoding="utf-8")


CLASS = ("alice", "bob", "carol", "dave", "erin", "frank")


def page(command: str, **values: str) -> str:
    """``command`` as the page has it, with sample values replaced (old=new)."""
    assert command in PAGE, f"the instructors page no longer has: {command}"
    for old, new in values.items():
        command = command.replace(old, new)
    return command


def _snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def _rows(path):
    with path.open(encoding="utf-8") as f:
        return {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}


class Course:
    """A course folder with its own workspace .grading/; runs the page's commands in it."""

    def __init__(self, root, solutions, ws=None):
        self.root, self.ws = root, ws or root / ".grading"
        self.env = dict(os.environ, AUTOGRADER_SOLUTIONS=str(solutions),
                        PYTHONPATH=str(REPO),
                        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
        self.log: list[str] = []

    def sh(self, command: str) -> str:
        proc = subprocess.run(["bash", "-c", command], cwd=self.root, env=self.env,
                              capture_output=True, text=True, timeout=1200)
        self.log.append(f"$ {command}\n{proc.stdout}")
        assert proc.returncode == 0, f"$ {command}\n{proc.stdout}\n{proc.stderr[-3000:]}"
        return proc.stdout

    def grades(self):
        return _rows(self.ws / "grades.csv")


def _hidden_cell(nb, grade_id):
    return next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == grade_id)


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    """Run the term; return (course, {step: grades.csv rows}, {step: output}, inputs)."""
    tmp = tmp_path_factory.mktemp("term")
    solutions = tmp / "solutions"
    for a in (A, B):
        shutil.copytree(REPO / "solutions" / a, solutions / a)
    source = solutions / A / f"{A}.ipynb"
    nb = nbformat.read(source, as_version=4)
    cell = _hidden_cell(nb, BROKEN)
    fixed_source = cell.source
    cell.source = cell.source.replace("### BEGIN HIDDEN TESTS\n", "### BEGIN HIDDEN TESTS\n" + BUG)
    assert cell.source != fixed_source
    nbformat.write(nb, source)
    root = tmp / "course"
    root.mkdir()
    (root / "nbgrader_config.py").write_text(
        "from autograder.nbgrader_settings import apply\n\n"
        f"apply(get_config(), {str(root / '.grading')!r})\n", encoding="utf-8")
    wrong = filled_notebook(A, parse_variant(variants(A)["attention_no_scale"])[0])
    with zipfile.ZipFile(root / "class-export.zip", "w") as z:
        z.writestr(f"alice_{A}.ipynb", nbformat.writes(filled_notebook(A)))
        z.writestr(f"bob_{A}.ipynb", nbformat.writes(wrong))
        z.writestr(f"carol_{A}.ipynb", nbformat.writes(filled_notebook(A)))
        z.writestr(f"dave_{A}.ipynb", nbformat.writes(filled_notebook("ex02_numpy_attention")))
    with zipfile.ZipFile(root / "ex03-export.zip", "w") as z:
        z.writestr(f"alice_{B}.ipynb", nbformat.writes(filled_notebook(B)))
        z.writestr(f"bob_{B}.ipynb", nbformat.writes(filled_notebook(B)))
        z.writestr(f"erin_{B}.ipynb", '{"cells": [')
    (root / "roster.csv").write_text("student_id,name,email\n" + "".join(
        f"{s},{s.title()},{s}@uni.example\n" for s in CLASS))
    canvas = ["Student,ID,SIS User ID,SIS Login ID,Section,Quiz 1 (7),"
              f"{A} (11),{B} (12),Current Score",
              "    Points Possible,,,,,10.00,14.00,12.00,(read only)"]
    canvas += [f'"{s.title()}, A",{100 + i},S{i:03},{s},Section 1,{i}.00,,,' for i, s in
               enumerate(CLASS)]
    (root / "Grades-ATT101.csv").write_bytes(("\n".join(canvas) + "\n").encode())
    course, rows, out = Course(root, solutions), {}, {}

    # 2. Collect
    for a, archive in ((A, "class-export.zip"), (B, "ex03-export.zip")):
        course.sh(page("mkdir -p .grading/downloaded/ex01_python_attention/archive",
                       ex01_python_attention=a))
        course.sh(page("cp class-export.zip .grading/downloaded/ex01_python_attention/archive/",
                       **{"class-export.zip": archive, "ex01_python_attention": a}))
        course.sh(page("nbgrader zip_collect ex01_python_attention", ex01_python_attention=a))
    submitted = course.ws / "submitted"
    (submitted / "alice" / A / "timestamp.txt").write_text("2026-12-01 16:00:00 UTC")
    (submitted / "carol" / A / "timestamp.txt").write_text("2026-12-01 18:30:00 UTC")
    inputs = _snapshot(submitted)

    # 3. Autograde with a due date: carol is 1.5 h late
    set_due = 'nbgrader db assignment add ex01_python_attention --duedate="2026-12-01 17:00:00 UTC"'
    grade = "python -m autograder grade .grading/submitted --workspace .grading --late-penalty zero"
    course.sh(page(set_due))
    out["first"] = course.sh(page(grade))
    rows["first"] = course.grades()
    assert _snapshot(submitted) == inputs, "the first grading run changed its input"

    # ... the due date moves a day later
    course.sh(page(set_due, **{"2026-12-01 17:00:00": "2026-12-02 17:00:00"}))
    out["moved"] = course.sh(page(grade))
    rows["moved"] = course.grades()
    assert _snapshot(submitted) == inputs

    # ... the wrong hidden test is fixed in the source
    nb = nbformat.read(source, as_version=4)
    _hidden_cell(nb, BROKEN).source = fixed_source
    nbformat.write(nb, source)
    out["fixed"] = course.sh(page(grade))
    rows["fixed"] = course.grades()
    assert _snapshot(submitted) == inputs

    # 4. The written answers
    out["list"] = course.sh(page("python -m autograder manual list ex03_scaling --workspace .grading"))
    out["score"] = course.sh(page(
        'python -m autograder manual score alice ex03_scaling derivation 2 --comment '
        '"Right variance; say why the terms are independent." --workspace .grading'))
    rows["manual"] = course.grades()

    # 5. Feedback and export
    course.sh(page("nbgrader generate_feedback ex03_scaling --force"))
    out["export"] = course.sh(page(
        "python -m autograder export --workspace .grading --roster roster.csv "
        "--out grades-upload.csv"))
    rows["export"] = _rows(root / "grades-upload.csv")
    out["canvas"] = course.sh(page("python -m autograder export --workspace .grading --canvas "
                                   "Grades-ATT101.csv --out canvas-import.csv"))
    out["moodle"] = course.sh(page("python -m autograder export --workspace .grading --moodle "
                                   "email --roster roster.csv --out moodle-import.csv"))
    assert _snapshot(submitted) == inputs
    return course, rows, out, inputs


def test_collect_puts_each_notebook_in_the_layout_grade_reads(term):
    course, _, _, inputs = term
    assert {str(p) for p in inputs if p.suffix == ".ipynb"} == {
        f"{s}/{A}/{A}.ipynb" for s in ("alice", "bob", "carol", "dave")} | {
        f"{s}/{B}/{B}.ipynb" for s in ("alice", "bob", "erin")}


def test_first_grading(term):
    """The wrong hidden test costs everyone its point; carol is late (penalty zero); the
    ex02 notebook submitted as ex01 is wrong-assignment; the derivation waits."""
    rows = term[1]["first"]
    assert (rows[("alice", A)]["status"], float(rows[("alice", A)]["score"])) == ("graded", 13)
    assert float(rows[("bob", A)]["score"]) == 7.0
    carol = rows[("carol", A)]
    assert (carol["status"], float(carol["score"]), float(carol["late_penalty"])) == (
        "late", 0.0, 13.0)
    assert "1.5 h after the due date" in carol["detail"]
    dave = rows[("dave", A)]
    assert dave["status"] == "wrong-assignment" and "ex02_numpy_attention" in dave["detail"]
    assert rows[("erin", B)]["status"] == "invalid-notebook"
    alice_b = rows[("alice", B)]
    assert alice_b["status"] == "needs-manual-grading"
    assert float(alice_b["score"]) == float(alice_b["max_score"]) - 3  # all but the derivation


def test_a_moved_due_date_regrades_and_carol_is_no_longer_late(term):
    rows, out = term[1]["moved"], term[2]["moved"]
    assert "changed: due date (4)" in out, out
    assert "graded 4 submission(s)" in out  # ex01 only; ex03 unchanged
    carol = rows[("carol", A)]
    assert (carol["status"], float(carol["score"]), float(carol["late_penalty"])) == (
        "graded", 13.0, 0.0)


def test_a_fixed_hidden_test_raises_the_rows_it_affects(term):
    rows, out = term[1]["fixed"], term[2]["fixed"]
    assert "changed: source notebook (4)" in out, out
    assert [float(rows[(s, A)]["score"]) for s in ("alice", "bob", "carol")] == [14, 8, 14]
    assert float(rows[("alice", B)]["score"]) == float(term[1]["moved"][("alice", B)]["score"])


def test_manual_grading_shows_in_grades_feedback_and_export(term):
    course, rows, out, _ = term
    assert "== alice  ex03_scaling  derivation  ungraded / 3" in out["list"], out["list"]
    assert "== bob  ex03_scaling  derivation  ungraded / 3" in out["list"]
    before, after = rows["fixed"][("alice", B)], rows["manual"][("alice", B)]
    assert after["status"] == "graded"
    assert float(after["score"]) == float(before["score"]) + 2
    html = (course.ws / "feedback" / "alice" / B / f"{B}.html").read_text(encoding="utf-8")
    assert "say why the terms are independent" in html
    assert rows["manual"][("bob", B)]["status"] == "needs-manual-grading"
    assert (course.ws / "feedback" / "bob" / B / f"{B}.html").is_file()


def test_export_has_every_learner_of_the_roster(term):
    _, rows, out, _ = term
    export = rows["export"]
    assert "12 row(s) (5 missing)" in out["export"], out["export"]
    got = {k: (r["status"], float(r["score"])) for k, r in export.items()}
    assert got[("alice", A)] == ("graded", 14.0)
    assert got[("bob", A)] == ("graded", 8.0)
    assert got[("carol", A)] == ("graded", 14.0)
    assert got[("dave", A)] == ("wrong-assignment", 0.0)
    assert got[("erin", A)] == ("missing", 0.0) and got[("frank", A)] == ("missing", 0.0)
    assert got[("alice", B)] == ("graded", float(rows["manual"][("alice", B)]["score"]))
    assert got[("erin", B)] == ("invalid-notebook", 0.0)
    assert got[("carol", B)] == ("missing", 0.0)
    assert float(export[("frank", B)]["max_score"]) == float(export[("alice", B)]["max_score"])
    for key, r in rows["manual"].items():  # the export and grades.csv agree
        assert (export[key]["status"], export[key]["score"]) == (r["status"], r["score"])


def test_canvas_and_moodle_files_hold_the_export_scores(term):
    """The page's commands fill Canvas's file and write Moodle's: each score is the
    export's; bob's derivation waits for a grade, so his ex03 cell gets none."""
    course, rows, out, _ = term
    export = rows["export"]
    with (course.root / "canvas-import.csv").open(encoding="utf-8") as f:
        canvas = {r["SIS Login ID"]: r for r in csv.DictReader(f)}
    with (course.root / "moodle-import.csv").open(encoding="utf-8") as f:
        moodle = {r["email"]: r for r in csv.DictReader(f)}
    assert export[("bob", B)]["status"] == "needs-manual-grading"
    for s in CLASS:
        for a, column in ((A, f"{A} (11)"), (B, f"{B} (12)")):
            if (s, a) == ("bob", B):
                assert canvas[s][column] == moodle[f"{s}@uni.example"][a] == "", out
                continue
            assert float(canvas[s][column]) == float(export[(s, a)]["score"]), (s, a)
            assert float(moodle[f"{s}@uni.example"][a]) == float(export[(s, a)]["score"])
        assert canvas[s]["Quiz 1 (7)"] == f"{CLASS.index(s)}.00"
    assert "12 cell(s) filled" not in out["canvas"] and "11 cell(s) filled" in out["canvas"]


def test_workspace_config_keeps_the_grading_options(term):
    """nbgrader's own commands in the workspace read grade's --late-penalty."""
    course = term[0]
    probe = ("from nbgrader.apps.autogradeapp import AutogradeApp\n"
             "from nbgrader.plugins import LateSubmissionPlugin\n"
             "app = AutogradeApp()\n"
             "app.initialize([])\n"
             "print(LateSubmissionPlugin(parent=app).penalty_method, app.coursedir.root)")
    got = course.sh(f"{sys.executable} -c '{probe}'").split()
    assert got == ["zero", str(course.ws.resolve())], got


def test_case_003_a_moved_due_date_a_new_timestamp_and_regrade(tmp_path):
    """Case 003: bob's correct notebook, submitted 2026-03-02 12:00 UTC, is late for a due
    date of 2026-03-01 17:00 (0 / 14 with --late-penalty zero); moving the due date to
    2026-03-03 regrades it (graded, 14 / 14); nothing changed: nothing graded; a new
    timestamp.txt alone regrades it; --regrade names the students to grade again."""
    subs, ws = tmp_path / "submissions", tmp_path / "ws"
    folder = subs / "bob" / A
    folder.mkdir(parents=True)
    nbformat.write(filled_notebook(A), folder / f"{A}.ipynb")
    (folder / "timestamp.txt").write_text("2026-03-02 12:00:00.000000 UTC")
    ws.mkdir()
    course = Course(ws, REPO / "solutions", ws=ws)

    def grade(*extra):
        out = course.sh(f"python -m autograder grade {subs} --workspace {ws} --late-penalty "
                        f"zero --no-progress --jobs 1 {' '.join(extra)}")
        return out, course.grades()[("bob", A)]

    def due(date):
        course.sh(f'nbgrader db assignment add {A} --duedate="{date} 17:00:00 UTC"')

    due("2026-03-01")
    out, bob = grade()
    assert (bob["status"], float(bob["score"]), float(bob["max_score"])) == ("late", 0, 14)
    due("2026-03-03")
    out, bob = grade()
    assert "changed: due date (1)" in out and "graded 1 submission(s)" in out, out
    assert (bob["status"], float(bob["score"]), float(bob["late_penalty"])) == ("graded", 14, 0)
    out, _ = grade()
    assert "graded 0 submission(s)" in out, out
    (folder / "timestamp.txt").write_text("2026-03-04 09:00:00.000000 UTC")
    out, bob = grade()
    assert "changed: timestamp (1)" in out, out
    assert (bob["status"], float(bob["score"]), float(bob["late_penalty"])) == ("late", 0, 14)
    out, _ = grade("--regrade", "bob")
    assert "changed: --regrade (1)" in out and "graded 1 submission(s)" in out, out
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs),
                           "--workspace", str(ws), "--regrade", "zoe"], env=course.env,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "--regrade names student(s) with no submission" in \
        proc.stderr and "zoe" in proc.stderr


def test_case_006_zoned_submission_times_are_late_by_the_right_hours(tmp_path):
    """Case 006: correct notebooks handed in at 17:30 UTC, half an hour after a due date of
    17:00 UTC, in the forms platforms write (git's space-separated -0700, an ISO offset,
    RFC 2822, an IANA zone): every one is late, by 0.5 h; an ambiguous zone is an error
    that names the file and its text, never a grade read from the wrong time."""
    subs, ws = tmp_path / "submissions", tmp_path / "ws"
    times = {"utc_late": "2026-12-01 17:30:00 UTC", "git_iso": "2026-12-01 10:30:00 -0700",
             "iso_offset": "2026-12-01T18:30:00+01:00",
             "rfc2822": "Tue, 01 Dec 2026 17:30:00 +0000",
             "berlin": "2026-12-01 18:30:00 Europe/Berlin",
             "ambiguous": "2026-12-01 11:30:00 CST"}
    for student, text in times.items():
        folder = subs / student / A
        folder.mkdir(parents=True)
        nbformat.write(filled_notebook(A), folder / f"{A}.ipynb")
        (folder / "timestamp.txt").write_text(text + "\n")
    inputs = _snapshot(subs)
    ws.mkdir()
    course = Course(ws, REPO / "solutions", ws=ws)
    course.sh(f'nbgrader db assignment add {A} --duedate="2026-12-01 17:00:00 UTC"')
    course.sh(f"python -m autograder grade {subs} --workspace {ws} --late-penalty zero "
              "--no-progress --jobs 2")
    grades = course.grades()
    for student in times:
        row = grades[(student, A)]
        if student == "ambiguous":
            assert row["status"] == "error", row
            assert "timestamp.txt holds '2026-12-01 11:30:00 CST'" in row["detail"], row
            continue
        assert (row["status"], float(row["score"]), float(row["late_penalty"])) == \
            ("late", 0, 14), (student, row)
        assert "0.5 h" in row["detail"] or "0:30" in row["detail"], (student, row["detail"])
    assert _snapshot(subs) == inputs
