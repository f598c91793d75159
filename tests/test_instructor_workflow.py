"""The instructor's whole workflow with nbgrader's own commands beside ours (issue 7).

release (nbgrader generate_assignment) -> collect a zip from a learning platform
(nbgrader zip_collect) -> autograde (python -m autograder grade; plain nbgrader autograde
still works) -> late penalty (nbgrader's LateSubmissionPlugin) -> manual grading of a
written answer (the gradebook formgrader writes to) -> feedback -> export.
"""

from __future__ import annotations

import csv
import sys
import zipfile

import nbformat
import pytest
from conftest import grade, run
from submissions import filled_notebook, parse_variant, variants

from autograder.config import SOLUTIONS

A = "ex01_python_attention"
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("workflow")]


def nbgrader(*args, cwd):
    proc = run([sys.executable, "-m", "nbgrader", *args], cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A workspace after collecting a zip of 3 submissions and grading them."""
    ws = tmp_path_factory.mktemp("course") / "ws"
    archive = ws / "downloaded" / A / "archive"
    archive.mkdir(parents=True)
    wrong = filled_notebook(A, parse_variant(variants(A)["attention_no_scale"])[0])
    with zipfile.ZipFile(archive / "lms-export.zip", "w") as z:
        z.writestr(f"alice_{A}.ipynb", nbformat.writes(filled_notebook(A)))
        z.writestr(f"bob_{A}.ipynb", nbformat.writes(wrong))
        z.writestr(f"carol_{A}.ipynb", nbformat.writes(filled_notebook(A)))
    # The workspace's config, as `python -m autograder grade` writes it, then release.
    proc, rows, _ = grade(tmp_path_factory.mktemp("empty"), ws)
    assert proc.returncode == 0, proc.stderr
    nbgrader("generate_assignment", A, "--force", cwd=ws)
    nbgrader("zip_collect", A, cwd=ws)
    for s in ("alice", "bob", "carol"):
        assert (ws / "submitted" / s / A / f"{A}.ipynb").is_file()
    # carol submitted two hours after the due date
    nbgrader("db", "assignment", "add", A, "--duedate=2026-01-01 12:00:00 UTC", cwd=ws)
    (ws / "submitted" / "carol" / A / "timestamp.txt").write_text("2026-01-01 14:00:00 UTC")
    (ws / "submitted" / "alice" / A / "timestamp.txt").write_text("2026-01-01 11:00:00 UTC")
    # Other names a collection leaves: dave's only notebook is attempt1.ipynb; erin's folder
    # holds her notebook and an older attempt beside it.
    (ws / "submitted" / "dave" / A).mkdir(parents=True)
    (ws / "submitted" / "dave" / A / "attempt1.ipynb").write_text(
        nbformat.writes(filled_notebook(A)), encoding="utf-8")
    (ws / "submitted" / "erin" / A).mkdir(parents=True)
    (ws / "submitted" / "erin" / A / f"{A}.ipynb").write_text(
        nbformat.writes(filled_notebook(A)), encoding="utf-8")
    (ws / "submitted" / "erin" / A / "attempt1.ipynb").write_text(nbformat.writes(wrong),
                                                                  encoding="utf-8")
    before = _snapshot(ws / "submitted")
    proc, rows, tests = grade(ws / "submitted", ws,
                              extra=["--late-penalty", "zero", "--timeout", "7"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return ws, rows, tests, before


def _snapshot(folder):
    """Relative path -> bytes of every file under ``folder``."""
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_grading_never_changes_its_input(course):
    """Submissions in the workspace's own submitted/ (where zip_collect puts them) are
    only read: every file is still there, byte for byte, and nothing was added."""
    ws, rows, _, before = course
    notebooks = {str(p) for p in before if p.suffix == ".ipynb"}
    assert notebooks == {f"{s}/{A}/{A}.ipynb" for s in ("alice", "bob", "carol", "erin")} | {
        f"dave/{A}/attempt1.ipynb", f"erin/{A}/attempt1.ipynb"}
    after = _snapshot(ws / "submitted")
    assert sorted(after) == sorted(before)
    changed = [str(p) for p in before if after[p] != before[p]]
    assert not changed, f"grading changed its input: {changed}"
    assert float(rows["dave"]["score"]) == 14.0 and rows["dave"]["status"] == "graded"
    assert float(rows["erin"]["score"]) == 14.0 and rows["erin"]["status"] == "graded"


def test_workspace_config_keeps_the_grading_options(course):
    """nbgrader's own commands in the workspace read grade's --timeout and --late-penalty."""
    ws = course[0]
    probe = ("from nbgrader.apps.autogradeapp import AutogradeApp\n"
             "from nbgrader.plugins import LateSubmissionPlugin\n"
             "from nbgrader.preprocessors import Execute\n"
             "app = AutogradeApp()\n"
             "app.initialize([])\n"  # reads ./nbgrader_config.py as `nbgrader autograde` does
             "print(Execute(parent=app).timeout, LateSubmissionPlugin(parent=app).penalty_method,"
             " app.coursedir.root)")
    proc = run([sys.executable, "-c", probe], cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["7", "zero", str(ws.resolve())], proc.stdout


def test_zip_collect_then_grade(course):
    _, rows, _, _ = course
    assert float(rows["alice"]["score"]) == 14.0 and rows["alice"]["status"] == "graded"
    assert float(rows["bob"]["score"]) == 8.0


def test_late_penalty_from_nbgrader_plugin(course):
    _, rows, _, _ = course
    assert rows["carol"]["status"] == "late"
    assert float(rows["carol"]["score"]) == 0.0, rows["carol"]
    assert "2.0 h" in rows["carol"]["detail"]


def test_plain_nbgrader_autograde_agrees(course, tmp_path):
    ws, rows, _, _ = course
    nbgrader("autograde", A, "--student", "bob", "--force", cwd=ws)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{ws / 'gradebook.db'}") as gb:
        assert gb.find_submission(A, "bob").score == float(rows["bob"]["score"])


def test_feedback_and_export(course):
    ws, rows, _, _ = course
    nbgrader("generate_feedback", A, "--force", cwd=ws)
    assert (ws / "feedback" / "bob" / A / f"{A}.html").is_file()
    out = ws / "export.csv"
    nbgrader("export", "--to", str(out), cwd=ws)
    exported = {r["student_id"]: r for r in csv.DictReader(out.open(encoding="utf-8"))}
    assert set(exported) == {"alice", "bob", "carol", "dave", "erin"}
    assert float(exported["bob"]["score"]) == 8.0 and float(exported["bob"]["max_score"]) == 14
    assert float(exported["carol"]["late_submission_penalty"]) == 14.0


@pytest.mark.skipif(not (SOLUTIONS / "ex03_scaling").is_dir(), reason="ex03 not present")
def test_manual_grading_of_a_written_derivation(tmp_path):
    """Formgrader writes manual scores to the gradebook; feedback and export show them."""
    a = "ex03_scaling"
    subs, ws = tmp_path / "subs", tmp_path / "ws"
    from submissions import write_submission

    write_submission(subs, "dana", a, filled_notebook(a))
    proc, rows, tests = grade(subs, ws)
    assert rows["dana"]["status"] == "needs-manual-grading", rows
    manual = [t for t, r in tests["dana"].items() if r["needs_manual_grade"] == "True"]
    assert manual, "ex03 has a manually graded derivation"
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{ws / 'gradebook.db'}") as gb:
        sub = gb.find_submission(a, "dana")
        auto = sub.score
        for g in sub.notebooks[0].grades:
            if g.name in manual:
                g.manual_score = g.max_score  # what formgrader does on "save"
        gb.db.commit()
        assert gb.find_submission(a, "dana").score > auto
        full = gb.find_submission(a, "dana").max_score
    nbgrader("generate_feedback", a, "--force", cwd=ws)
    out = ws / "export.csv"
    nbgrader("export", "--to", str(out), cwd=ws)
    dana = next(r for r in csv.DictReader(out.open(encoding="utf-8")) if r["student_id"] == "dana")
    assert float(dana["score"]) == float(dana["max_score"]) == full
