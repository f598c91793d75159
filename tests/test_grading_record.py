"""One record, regrade keys, wrong-assignment, export and manual grading, unit by unit
(issue 12): on a gradebook built with nbgrader's API, no kernel and no nbgrader run.

The class-level runs of the same pieces are in test_instructor_workflow.py.
"""

from __future__ import annotations

import contextlib
import copy

import csv
import json
import os
import shutil
import sys
from datetime import datetime, timedelta

import nbformat
import pytest
from sqlalchemy.engine import Engine
from submissions import filled_notebook, write_submission

from autograder.grading import export, keys, manual, record, submission
from autograder.grading.prevalidate import prevalidate
from autograder.grading.gradebook import open_gradebook
from autograder.grading.results import Row, Status, load_state, save_state

A = "ex01_python_attention"
X = "exA"  # the assignment of the hand-built gradebook


# -- regrade keys ----------------------------------------------------------------------


def _inputs(sub, **over):
    values = dict(due="2026-03-01 17:00:00", extension="", late_penalty="zero",
                  source=None, check_code="c0")
    values.update(over)
    return keys.inputs(sub, **values)


def test_every_input_of_a_grade_changes_its_key(tmp_path):
    path = write_submission(tmp_path / "subs", "bob", A, filled_notebook(A))
    (path.parent / "timestamp.txt").write_text("2026-03-02 12:00:00 UTC")
    source = tmp_path / "source.ipynb"
    source.write_text("{}")
    sub = submission.discover(tmp_path / "subs")[0]
    base = keys.digest(_inputs(sub, source=source))
    assert base == keys.digest(_inputs(sub, source=source))  # deterministic
    changed = {
        "due date": _inputs(sub, source=source, due="2026-03-03 17:00:00"),
        "extension": _inputs(sub, source=source, extension="1 day, 0:00:00"),
        "late penalty": _inputs(sub, source=source, late_penalty="none"),
        "check code": _inputs(sub, source=source, check_code="c1"),
    }
    for name, values in changed.items():
        assert keys.digest(values) != base, name
        assert keys.changed(_inputs(sub, source=source), values) == [name]
    before = json.loads(json.dumps(_inputs(sub, source=source)))  # as the side table keeps it
    source.write_text('{"cells": []}')  # a fixed hidden test in solutions/
    assert keys.changed(before, _inputs(sub, source=source)) == ["source notebook"]
    source.write_text("{}")
    (path.parent / "timestamp.txt").write_text("2026-03-02 12:00:01 UTC")
    assert keys.changed(before, _inputs(sub, source=source)) == ["timestamp"]
    path.write_text(path.read_text() + " ")
    assert keys.changed(before, _inputs(submission.discover(tmp_path / "subs")[0],
                                        source=source)) == ["notebook", "timestamp"]


def test_check_code_digest_follows_every_check_file(tmp_path):
    for name in keys.CHECK_CODE:
        target = tmp_path / name / "x.py" if not name.endswith(".py") else tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("a = 1\n")
    first = keys.check_code_digest.__wrapped__(tmp_path)
    (tmp_path / "autograder" / "checks" / "x.py").write_text("a = 2\n")  # a fixed check
    assert keys.check_code_digest.__wrapped__(tmp_path) != first
    assert len(keys.check_code_digest()) == 64  # the repository's own


# -- wrong assignment ------------------------------------------------------------------


def test_an_ex02_notebook_submitted_as_ex01_is_wrong_assignment(tmp_path):
    """ex01 and ex02 share grade_ids (softmax, test_kc1...): a detector that only asks
    whether an id overlaps (the old one) lets the ex02 notebook through; what its read-only
    cells hold says it is ex02."""
    nb = filled_notebook("ex02_numpy_attention")
    from autograder.grading.integrity import grade_ids, released_cells

    assert grade_ids(nb) & set(released_cells(A)), "the ids overlap: the old check passes"
    path = write_submission(tmp_path, "dave", A, nb)
    got, bad = prevalidate(submission.Submission("dave", A, path))
    assert got is None and bad[0] == Status.WRONG_ASSIGNMENT
    assert "notebook of ex02_numpy_attention, not of ex01_python_attention" in bad[1]
    right = write_submission(tmp_path, "erin", A, filled_notebook(A))
    assert prevalidate(submission.Submission("erin", A, right))[1] is None


@pytest.mark.parametrize("text,ok", [
    ("2026-12-01 18:30:00 UTC", True), ("Tuesday, 1 December 2026, 7:30 PM", True),
    ("soon", False), ("", False)])
def test_an_unreadable_timestamp_is_named_before_nbgrader_runs(tmp_path, text, ok):
    """nbgrader fails on a timestamp.txt it cannot parse with "'CourseDirectory' object has
    no attribute 'fail'", which grade reported as "nbgrader failed: ... see the above
    traceback"; the row now says which file holds what."""
    path = write_submission(tmp_path, "tz", A, filled_notebook(A))
    (path.parent / "timestamp.txt").write_text(text + "\n")
    nb, bad = prevalidate(submission.Submission("tz", A, path))
    if ok:
        assert bad is None and nb is not None
    else:
        assert nb is None and bad[0] == Status.ERROR
        assert bad[1].startswith(f"timestamp.txt holds {text!r}, which is not read as a submission")


# -- one record: a gradebook built with nbgrader's API ---------------------------------


@pytest.fixture
def workspace(template, tmp_path):
    """A copy of :func:`template`."""
    shutil.copytree(template, tmp_path / "ws")
    return tmp_path / "ws"


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A gradebook with assignment exA (two autograded tests of 3 and 2 points, a written
    answer of 4 points) and the side table of a grading run: alice on time, bob 2 h late
    (penalty: zero), carol's notebook invalid (never reached the gradebook)."""
    # nbgrader creates a gradebook with alembic, found on PATH
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    ws = tmp_path_factory.mktemp("template") / "ws"
    ws.mkdir()
    due = datetime(2026, 3, 1, 17, 0)
    with open_gradebook(ws) as gb:
        gb.add_assignment(X, duedate=due)
        gb.add_notebook(X, X)
        gb.add_grade_cell("test_a", X, X, max_score=3, cell_type="code")
        gb.add_grade_cell("test_b", X, X, max_score=2, cell_type="code")
        gb.add_grade_cell("derivation", X, X, max_score=4, cell_type="markdown")
        gb.add_solution_cell("derivation", X, X)
        for student, late in (("alice", -1), ("bob", 2)):
            gb.add_student(student)
            sub = gb.add_submission(X, student, timestamp=due + timedelta(hours=late))
            nb = sub.notebooks[0]
            for g in nb.grades:
                g.auto_score = {"test_a": 3.0, "test_b": 1.0}.get(g.name)
                g.needs_manual_grade = g.name == "derivation"
            if late > 0:
                nb.late_submission_penalty = 4.0  # the zero penalty takes all it earned
        gb.db.commit()
    rows = {}
    for student in ("alice", "bob"):
        rows[(student, X)] = Row(student, X, status=Status.GRADED, scored=True,
                                 events=json.dumps({"restored-tests": "test_a edited"}
                                                   if student == "bob" else {}))
    rows[("carol", X)] = Row("carol", X, status=Status.INVALID_NOTEBOOK,
                             detail="not valid JSON")
    save_state(ws, rows)
    autograded = ws / "autograded" / "alice" / X
    autograded.mkdir(parents=True)
    cell = nbformat.v4.new_markdown_cell("Var(q.k) = d_k, so divide by sqrt(d_k).")
    cell.metadata["nbgrader"] = {"grade_id": "derivation", "grade": True, "solution": True}
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), autograded / f"{X}.ipynb")
    return ws


def _csv(path):
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_grades_csv_is_derived_from_the_gradebook(workspace):
    rows, _ = record.rewrite_records(workspace)
    alice, bob, carol = rows[("alice", X)], rows[("bob", X)], rows[("carol", X)]
    assert (alice.score, alice.max_score, alice.status) == (4.0, 9.0,
                                                            Status.NEEDS_MANUAL_GRADING)
    assert (bob.score, bob.late_penalty, bob.status) == (0.0, 4.0, Status.RESTORED_TESTS)
    assert "late: submitted 2.0 h after the due date; 4 points before" in bob.detail
    assert (carol.score, carol.status) == (0.0, Status.INVALID_NOTEBOOK)
    on_disk = {r["student_id"]: r for r in _csv(workspace / "grades.csv")}
    assert on_disk["alice"]["score"] == "4.0" and on_disk["bob"]["late_penalty"] == "4.0"
    kinds = {(r["student_id"], r["test"]): r["kind"] for r in _csv(workspace / "tests.csv")}
    assert kinds[("alice", "derivation")] == "manual"
    assert kinds[("alice", "test_a")] == "autograded"
    rates = {r["test"] for r in _csv(workspace / "test_pass_rates.csv")}
    assert rates == {"test_a", "test_b"}, "a written answer has no pass rate"


def test_an_extension_granted_in_the_gradebook_shows(workspace):
    with open_gradebook(workspace) as gb:
        gb.grant_extension(X, "bob", hours=3)
        assert keys.schedule(gb, X, "bob") == ("2026-03-01 17:00:00", "3:00:00")
        # nbgrader's late penalty is assigned by autograde; a regrade would clear it:
        gb.find_submission(X, "bob").notebooks[0].late_submission_penalty = 0.0
        gb.db.commit()
    bob = record.rewrite_records(workspace)[0][("bob", X)]
    assert (bob.score, bob.status) == (4.0, Status.RESTORED_TESTS)
    assert "late" not in bob.detail


def test_manual_list_and_score_then_grades_and_export_agree(workspace, capsys):
    found = manual.answers(workspace)
    assert [(a.student_id, a.cell, a.max_score, a.score) for a in found] == [
        ("alice", "derivation", 4.0, None), ("bob", "derivation", 4.0, None)]
    assert found[0].text.startswith("Var(q.k) = d_k")
    assert manual.main_list(workspace, X) == 0
    out = capsys.readouterr().out
    assert "== alice  exA  derivation  ungraded / 4" in out and "2 ungraded" in out
    manual.record_score(workspace, "alice", X, "derivation", 3, "right idea, no sqrt")
    rows, _ = record.rewrite_records(workspace)
    assert (rows[("alice", X)].score, rows[("alice", X)].status) == (7.0, Status.GRADED)
    assert manual.answers(workspace, X)[0].comment == "right idea, no sqrt"
    roster = workspace.parent / "roster.csv"
    roster.write_text("student_id,name\nalice,A\nbob,B\ncarol,C\ndave,D\n")
    table, warnings = export.export(workspace, workspace / "export.csv", roster)
    got = {r["student_id"]: r for r in _csv(workspace / "export.csv")}
    assert len(table) == 4 and not warnings
    assert (got["alice"]["score"], got["alice"]["status"]) == ("7.0", "graded")
    assert (got["bob"]["score"], got["bob"]["late_penalty"]) == ("0.0", "4.0")
    assert (got["carol"]["status"], got["carol"]["max_score"]) == ("invalid-notebook", "9.0")
    assert (got["dave"]["status"], got["dave"]["score"]) == ("missing", "0.0")
    assert {r["student_id"]: r for r in _csv(workspace / "grades.csv")}["alice"]["score"] == "7.0"


def _mark_for_manual_grading(workspace, student):
    """What nbgrader's autograde does to a scored written answer when it regrades."""
    with open_gradebook(workspace) as gb:
        gb.find_grade("derivation", X, X, student).needs_manual_grade = True
        gb.db.commit()


def test_a_regrade_keeps_the_manual_score_of_an_unchanged_answer(workspace, capsys):
    """A regrade for a moved due date or a fixed hidden test used to put every scored
    submission back to needs-manual-grading (nbgrader marks the answer again); only a
    changed answer (a resubmission) goes back to the instructor now."""
    manual.record_score(workspace, "alice", X, "derivation", 3, "right idea")
    _mark_for_manual_grading(workspace, "alice")
    rows, _ = record.rewrite_records(workspace)
    assert (rows[("alice", X)].score, rows[("alice", X)].status) == (7.0, Status.GRADED)
    derivation = next(t for t in rows[("alice", X)].tests if t["test"] == "derivation")
    assert derivation["needs_manual_grade"] is False
    autograded = workspace / "autograded" / "alice" / X / f"{X}.ipynb"
    nb = nbformat.read(autograded, as_version=4)
    nb.cells[0].source = "Resubmitted: Var(q.k) = d_k because the terms are independent."
    nbformat.write(nb, autograded)
    _mark_for_manual_grading(workspace, "alice")
    with open_gradebook(workspace) as gb:  # scored in formgrader, then graded again
        gb.find_grade("derivation", X, X, "bob").manual_score = 2.0
        gb.db.commit()
    rows, _ = record.rewrite_records(workspace)
    assert (rows[("alice", X)].score, rows[("alice", X)].status) == (
        7.0, Status.NEEDS_MANUAL_GRADING)
    assert Status.NEEDS_MANUAL_GRADING.value in rows[("bob", X)].detail
    manual.main_list(workspace, X)
    out = capsys.readouterr().out
    assert ("== alice  exA  derivation  3 / 4 (to review: the answer changed after it was "
            "scored)  comment: right idea") in out
    assert ("== bob  exA  derivation  2 / 4 (to review: graded again since it was scored; "
            "score it again to keep it)") in out
    assert "2 written answer(s), 0 ungraded, 2 to review." in out


def test_manual_list_shows_a_blank_answer_that_nbgrader_scored(workspace, capsys):
    """nbgrader scores a written answer left as released 0 itself (not for review):
    grades.csv says graded, so the list must not call it ungraded."""
    with open_gradebook(workspace) as gb:
        g = gb.find_grade("derivation", X, X, "bob")
        g.auto_score, g.needs_manual_grade = 0.0, False
        gb.db.commit()
    manual.main_list(workspace, X)
    out = capsys.readouterr().out
    assert "== bob  exA  derivation  0 / 4 (blank: scored by nbgrader)" in out
    assert "== alice  exA  derivation  ungraded / 4" in out
    assert "2 written answer(s), 1 ungraded." in out


@pytest.mark.parametrize("cell,points,message", [
    ("derivation", 5, "points 5 outside 0..4 for derivation"),
    ("derivation", -1, "points -1 outside 0..4"),
    ("test_a", 1, "has no written answer 'test_a'; its written answers: derivation"),
])
def test_manual_score_refuses_what_is_not_a_written_answer_or_out_of_range(
        workspace, cell, points, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        manual.record_score(workspace, "alice", X, cell, points)
    with pytest.raises(ValueError, match="no graded submission of exA by 'zoe'"):
        manual.record_score(workspace, "zoe", X, "derivation", 1)


def test_export_without_a_roster_has_every_student_and_warns_of_strangers(workspace):
    table, _ = export.export(workspace, workspace / "all.csv")
    assert [r["student_id"] for r in table] == ["alice", "bob", "carol"]
    roster = workspace.parent / "ids.txt"
    roster.write_text("alice\nbob\n")
    table, warnings = export.export(workspace, workspace / "some.csv", roster)
    assert [r["student_id"] for r in table] == ["alice", "bob"]
    assert warnings == ["submissions from students not on the roster, left out: carol"]
    bad = workspace.parent / "bad.csv"
    bad.write_text("name,email\nA,a@x\n")
    with pytest.raises(ValueError, match="no 'student_id' or 'id' column"):
        export.read_roster(bad)


def test_side_table_rows_survive_and_unscored_rows_keep_their_status(workspace):
    state = load_state(workspace)
    assert state[("carol", X)].scored is False and state[("alice", X)].scored is True
    with open_gradebook(workspace) as gb:
        row = state[("carol", X)]
        assert record.score_from_gradebook(row, gb) is False and row.status == Status.INVALID_NOTEBOOK


def test_a_row_read_alone_equals_the_row_read_with_the_class_in_a_few_queries(workspace):
    """A worker fills each row from the gradebook on its own (record.submission), the
    end of a run all rows in batches (record.submissions): the same rows, each alone in a
    handful of queries (nbgrader's lazy loading takes 17 for a row of three tests:
    a worker that used ``find_submission`` would fail the count)."""
    state = load_state(workspace)
    with open_gradebook(workspace) as gb:
        loaded = dict(record.submissions(gb))
        batched = {k: copy.deepcopy(state[k]) for k in loaded}
        for row in batched.values():
            assert record.score_from_gradebook(row, gb, loaded)
    with open_gradebook(workspace) as gb, _counted() as seen:
        statements = seen["statements"]
        for key, expected in batched.items():
            row, before = copy.deepcopy(state[key]), len(statements)
            assert record.score_from_gradebook(row, gb)
            assert row == expected and len(row.tests) == 3
            assert len(statements) - before <= 6, statements[before:]
        assert record.submission(gb, X, "zoe") is None


def _feedback_cells(n: int = 3):
    """exA's first ``n`` graded cells as a notebook has them (nbgrader metadata only)."""
    cells = []
    for name, kind in (("test_a", "code"), ("test_b", "code"), ("derivation", "markdown"))[:n]:
        cell = getattr(nbformat.v4, f"new_{kind}_cell")("")
        cell.metadata["nbgrader"] = {"grade_id": name, "grade": True,
                                     "solution": name == "derivation"}
        cells.append(cell)
    return nbformat.v4.new_notebook(cells=cells)


def test_the_feedback_reads_a_notebooks_grades_and_comments_at_once(workspace):
    """notebook_grades: nbgrader's GetGrades (generate_feedback) writes into each cell the
    score, points and comment that nbgrader's own lookups give (find_grade, find_comment),
    with the notebook's grades and comments read in statements as many for three cells as
    for one (nbgrader's own: 6 for one cell, 17 for three); a cell the gradebook lacks
    still raises nbgrader's MissingEntry."""
    from nbgrader.api import MissingEntry
    from nbgrader.preprocessors import GetGrades

    from autograder.grading import gradebook, speedups

    speedups.apply()  # notebook_grades with the rest, once per process
    with open_gradebook(workspace) as gb:
        for g in gb.find_submission(X, "bob").notebooks[0].grades:
            g.manual_score = 2.5 if g.name == "derivation" else None
        gb.find_comment("derivation", X, X, "bob").manual_comment = "see the variance"
        gb.db.commit()
    with _counted() as seen:
        statements = seen["statements"]
        for student in ("alice", "bob"):
            resources = {"nbgrader": {"notebook": X, "assignment": X, "student": student,
                                      "db_url": gradebook.db_url(workspace)}}
            before = len(statements)
            GetGrades().preprocess(_feedback_cells(1), resources)
            one = len(statements) - before
            nb, _ = GetGrades().preprocess(_feedback_cells(), resources)
            assert len(statements) - before - one == one, statements[before:]
            with open_gradebook(workspace) as gb:
                expected = [{"score": g.score, "points": g.max_score} for g in
                            (gb.find_grade(c.metadata.nbgrader["grade_id"], X, X, student)
                             for c in nb.cells)]
                expected[2]["comment"] = gb.find_comment("derivation", X, X, student).comment
            got = [{k: c.metadata.nbgrader[k] for k in ("score", "points", "comment")
                    if k in c.metadata.nbgrader} for c in nb.cells]
            assert got == expected
        assert got == [{"score": 3.0, "points": 3.0}, {"score": 1.0, "points": 2.0},
                       {"score": 2.5, "points": 4.0, "comment": "see the variance"}]
    missing = _feedback_cells()
    missing.cells[0].metadata["nbgrader"]["grade_id"] = "test_gone"
    with pytest.raises(MissingEntry):
        GetGrades().preprocess(missing, resources)


@contextlib.contextmanager
def _counted():
    """The gradebook's transactions and statements while the block runs:
    ``{"commits": [...], "statements": [SQL, ...]}``, filled as they happen."""
    from sqlalchemy import event

    seen: dict[str, list] = {"commits": [], "statements": []}
    committed = lambda *args: seen["commits"].append(1)  # noqa: E731 - a transaction's end
    count = lambda *args: seen["statements"].append(args[2])  # noqa: E731 - the statement
    event.listen(Engine, "commit", committed)
    event.listen(Engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", count)
        event.remove(Engine, "commit", committed)


def _autograded_cells(errors: tuple[str, ...] = ("test_b",), extra: str = "",
                      answered: bool = False):
    """exA's graded cells as autograde leaves them: the tests in ``errors`` with an error
    output, the written answer untouched (its checksum) or ``answered``; ``extra``: one more
    test cell."""
    from nbgrader.utils import compute_checksum

    cells = []
    for name, points in (("test_a", 3), ("test_b", 2), (extra, 1), ("derivation", 4)):
        if not name:
            continue
        kind = "markdown" if name == "derivation" else "code"
        cell = getattr(nbformat.v4, f"new_{kind}_cell")("")
        cell.metadata["nbgrader"] = {"grade_id": name, "grade": True, "points": points,
                                     "solution": kind == "markdown"}
        if name in errors:
            cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError",
                                                   evalue="", traceback=[])]
        cell.metadata["nbgrader"]["checksum"] = compute_checksum(cell)
        if answered and kind == "markdown":
            cell.source = "Var(q.k) = d_k."
        cells.append(cell)
    return nbformat.v4.new_notebook(cells=cells)


def _saved(workspace, student: str) -> list:
    with open_gradebook(workspace) as gb:
        return [(g.name, g.auto_score, g.needs_manual_grade) for g in
                sorted(gb.find_submission_notebook(X, X, student).grades, key=lambda g: g.name)] \
            + [gb.find_comment("derivation", X, X, student).auto_comment]


def test_autograde_saves_a_notebooks_scores_in_one_transaction(workspace):
    """notebook_grades: nbgrader's SaveAutoGrades (autograde) writes the scores and comment
    nbgrader's rules give (a failed test 0, a written answer left for a grader, 0 and "No
    response." for an untouched one, a grader's manual score kept for review) in one
    transaction per notebook (nbgrader's own: one per cell, four here, each written to
    disk), its grades and comment found in three queries; a cell the gradebook lacks raises
    nbgrader's MissingEntry and saves nothing of the notebook."""
    from nbgrader.api import MissingEntry
    from nbgrader.preprocessors import SaveAutoGrades

    from autograder.grading import gradebook, speedups

    speedups.apply()  # notebook_grades with the rest, once per process
    with open_gradebook(workspace) as gb:
        for g in gb.find_submission(X, "bob").notebooks[0].grades:
            g.manual_score = 1.0 if g.name == "test_a" else None
        gb.db.commit()
    resources = {"nbgrader": {"notebook": X, "assignment": X, "student": "alice",
                              "db_url": gradebook.db_url(workspace)}}
    with _counted() as seen:
        commits, statements = seen["commits"], seen["statements"]
        SaveAutoGrades().preprocess(_autograded_cells(("test_a",)), resources)
        selects = [q for q in statements if q.startswith("SELECT")]
        # nbgrader's opening of a gradebook commits (writing nothing), then ours, once
        assert len(commits) == 2 and len(selects) == 4, statements  # the course, then ours
        for student in ("alice", "bob"):
            resources["nbgrader"]["student"] = student
            SaveAutoGrades().preprocess(_autograded_cells(answered=student == "bob"),
                                        resources)
        assert len(commits) == 6
    assert _saved(workspace, "alice") == [("derivation", 0.0, False), ("test_a", 3.0, False),
                                          ("test_b", 0.0, False), "No response."]
    assert _saved(workspace, "bob") == [("derivation", None, True),  # for a grader
                                        ("test_a", 3.0, True),  # its manual score kept
                                        ("test_b", 0.0, False), None]
    with pytest.raises(MissingEntry):
        SaveAutoGrades().preprocess(_autograded_cells(("test_a", "test_b"), "test_gone"),
                                    resources)
    assert _saved(workspace, "bob")[1:3] == [("test_a", 3.0, True), ("test_b", 0.0, False)]


def test_export_command_refuses_a_missing_workspace_or_one_being_graded(tmp_path, capsys):
    from filelock import FileLock

    assert export.main(tmp_path / "nowhere", None, None) == 2
    assert "no grading workspace at" in capsys.readouterr().err
    (tmp_path / "ws").mkdir()
    assert export.main(tmp_path / "ws", None, tmp_path / "roster.csv") == 2
    assert "no roster file at" in capsys.readouterr().err
    with FileLock(tmp_path / "ws" / ".lock"):
        assert export.main(tmp_path / "ws", None, None) == 2
    assert "a grading run is using" in capsys.readouterr().err


def _source(points: float = 3.0):
    """A small nbgrader source notebook: a locked introduction, a solution, a locked test
    of ``points`` points and a written answer of 4 points."""
    cells = [nbformat.v4.new_markdown_cell("Derive it."), nbformat.v4.new_code_cell("x = 1"),
             nbformat.v4.new_code_cell("assert x == 1"), nbformat.v4.new_markdown_cell("")]
    for cell, (name, grade, solution, locked) in zip(cells, (
            ("intro", False, False, True), ("answer", False, True, False),
            ("test_a", True, False, True), ("derivation", True, True, False))):
        cell.metadata["nbgrader"] = {"grade_id": name, "grade": grade, "solution": solution,
                                     "locked": locked, "schema_version": 3, "task": False}
        if grade:
            cell.metadata["nbgrader"]["points"] = points if name == "test_a" else 4.0
    return nbformat.v4.new_notebook(cells=cells)


def _recorded(ws) -> list:
    with open_gradebook(ws) as gb:
        nb = gb.find_notebook("n", "a")
        return sorted((type(c).__name__, c.name, getattr(c, "max_score", None),
                       getattr(c, "locked", None), getattr(c, "checksum", None))
                      for c in nb.source_cells + nb.grade_cells + nb.solution_cells)


def _release(ws, gradebook_class, monkeypatch) -> tuple[tuple[int, int], list]:
    """SaveCells run on :func:`_source` into a new gradebook in ``ws`` opened with
    ``gradebook_class``: ((commits, statements), the cells recorded)."""
    import nbgrader.preprocessors.savecells as savecells
    from nbgrader.preprocessors import SaveCells

    from autograder.grading import gradebook

    ws.mkdir()
    with open_gradebook(ws) as gb:
        gb.add_assignment("a")
    resources = {"nbgrader": {"notebook": "n", "assignment": "a",
                              "db_url": gradebook.db_url(ws)}}
    monkeypatch.setattr(savecells, "Gradebook", gradebook_class)
    try:
        with _counted() as seen:
            SaveCells().preprocess(_source(), resources)
    finally:
        monkeypatch.undo()
    counted = len(seen["commits"]), len(seen["statements"])
    with open_gradebook(ws) as gb:
        notebooks = gb.find_assignment("a").notebooks
    return counted, _recorded(ws) if notebooks else []


def test_release_records_a_notebooks_cells_in_one_transaction(tmp_path, monkeypatch):
    """notebook_cells: nbgrader's SaveCells (generate_assignment) records the cells nbgrader
    records, in one transaction (nbgrader's own: one per cell and more, ten here); a cell
    refused records nothing of the notebook (nbgrader's own kept the cells before it)."""
    import nbgrader.preprocessors.savecells as savecells
    from nbgrader.api import Gradebook, InvalidEntry

    from autograder.grading import speedups

    speedups.apply()  # notebook_cells with the rest, once per process
    ours = savecells.Gradebook
    (commits, _), cells = _release(tmp_path / "ours", ours, monkeypatch)
    (own_commits, _), own_cells = _release(tmp_path / "own", Gradebook, monkeypatch)
    assert cells == own_cells and len(cells) == 8, cells
    assert (commits, own_commits) == (2, 10)  # the opening's (nothing written), then ours
    own_save = Gradebook.update_or_create_source_cell

    def refuse(self, name, *args, **kwargs):  # the last cells nbgrader records
        if name == "derivation":
            raise InvalidEntry("refused")
        return own_save(self, name, *args, **kwargs)

    for name, kind in (("refused-ours", ours), ("refused-own", Gradebook)):
        with pytest.raises(InvalidEntry):
            Gradebook.update_or_create_source_cell = refuse
            try:
                _release(tmp_path / name, kind, monkeypatch)
            finally:
                Gradebook.update_or_create_source_cell = own_save
    assert _release_kept(tmp_path / "refused-ours") == 0
    assert _release_kept(tmp_path / "refused-own") > 0


def _release_kept(ws) -> int:
    """How many cells of notebook ``n`` the gradebook in ``ws`` holds."""
    with open_gradebook(ws) as gb:
        notebooks = gb.find_assignment("a").notebooks
        return sum(len(nb.source_cells) + len(nb.grade_cells) for nb in notebooks)


def test_autograde_checks_a_notebooks_cells_against_the_release_read_at_once(
        tmp_path, monkeypatch):
    """notebook_cells: nbgrader's OverwriteCells (autograde) puts back what nbgrader puts
    back (a locked cell's source, a test's points, a cell's type; the id of a cell the
    release lacks dropped) with the notebook's cells read in three queries, however many
    cells it has (nbgrader's own: one or two queries a cell, eight statements here to five)."""
    import nbgrader.preprocessors.overwritecells as overwritecells
    import nbgrader.preprocessors.savecells as savecells
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import ComputeChecksums, OverwriteCells, SaveCells

    from autograder.grading import gradebook, speedups

    speedups.apply()
    ws = tmp_path / "ws"
    ws.mkdir()
    with open_gradebook(ws) as gb:
        gb.add_assignment("a")
    resources = {"nbgrader": {"notebook": "n", "assignment": "a",
                              "db_url": gradebook.db_url(ws)}}
    released, _ = ComputeChecksums().preprocess(_source(), {})
    SaveCells().preprocess(copy.deepcopy(released), resources)
    assert savecells.Gradebook is not Gradebook
    submitted = copy.deepcopy(released)
    submitted.cells[0].source = "Nothing to derive."  # locked: put back
    submitted.cells[1].cell_type = "markdown"  # the solution's type: put back
    submitted.cells[2].metadata["nbgrader"]["points"] = 30.0  # put back
    extra = nbformat.v4.new_code_cell("y = 2")
    extra.metadata["nbgrader"] = {"grade_id": "extra", "grade": False, "solution": True,
                                  "locked": False, "schema_version": 3, "task": False}
    submitted.cells.append(extra)  # not in the release: its id is dropped
    done = {}
    for name, kind in (("ours", overwritecells.Gradebook), ("own", Gradebook)):
        monkeypatch.setattr(overwritecells, "Gradebook", kind)
        nb = copy.deepcopy(submitted)
        with _counted() as seen:
            OverwriteCells().preprocess(nb, resources)
        done[name] = nb, len(seen["statements"])
        monkeypatch.undo()
    assert done["ours"][0] == done["own"][0]
    nb = done["ours"][0]
    assert nb.cells[0].source == "Derive it." and nb.cells[1].cell_type == "code"
    assert nb.cells[2].metadata["nbgrader"]["points"] == 3.0
    assert "grade_id" not in nb.cells[-1].metadata["nbgrader"]
    assert done["ours"][1] <= 5 < done["own"][1], (done["ours"][1], done["own"][1])
