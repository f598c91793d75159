"""The grading contract, through ``python -m autograder grade`` as an instructor runs it.

For every exercise with sources: one class holds the reference solution, the untouched
learner notebook and every implementation under ``tests/implementations/<assignment>/``.
The reference scores full marks, the stub scores 0, each wrong implementation loses
exactly the tests its docstring names, and each correct alternative scores full marks.
The whole class is graded with LANG=C / LC_ALL=C: the locked cells hold non-ASCII
mathematics (cases/001), which must survive grading, feedback and export.
"""

from __future__ import annotations

import json
import os
import re
import sys
from html import unescape
from types import SimpleNamespace

import nbformat
import pytest
from conftest import grade, read_results, run
from filelock import FileLock
from submissions import filled_notebook, parse_variant, variant_hints, variants, write_submission

import autograder
from autograder.config import EXERCISES, SOLUTIONS

ASSIGNMENTS = list(autograder.ASSIGNMENTS)  # the registry: exercises found in solutions/
pytestmark = pytest.mark.slow  # one class run per exercise
# PYTHONUTF8=0: the C locale without Python's automatic UTF-8 mode, i.e. ASCII everywhere
C_LOCALE = {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0"}
_classes: dict[str, tuple] = {}


def graded_class(assignment: str, tmp_path_factory) -> tuple:
    """Grade the assignment's whole test class once per session, whichever xdist worker asks
    first (a file lock in the session's shared temporary folder); the others read its CSVs."""
    if assignment not in _classes:
        base = tmp_path_factory.getbasetemp()
        shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
        root = shared / f"class-{assignment}"
        subs, ws = root / "submitted", root / "workspace"
        with FileLock(shared / f"class-{assignment}.lock"):
            if not (root / "proc.json").is_file():
                write_submission(subs, "reference", assignment, filled_notebook(assignment))
                stub = nbformat.read(EXERCISES / assignment / f"{assignment}.ipynb",
                                     as_version=4)
                write_submission(subs, "stub", assignment, stub)
                for name, path in variants(assignment).items():
                    cells, _ = parse_variant(path)
                    write_submission(subs, name, assignment, filled_notebook(assignment, cells))
                proc, _, _ = grade(subs, ws, jobs=2, env=C_LOCALE)
                (root / "proc.json").write_text(json.dumps(
                    {"returncode": proc.returncode, "stdout": proc.stdout,
                     "stderr": proc.stderr}), encoding="utf-8")
        proc = SimpleNamespace(**json.loads((root / "proc.json").read_text(encoding="utf-8")))
        rows, tests = read_results(ws)
        _classes[assignment] = (proc, rows, tests, ws)
    return _classes[assignment]


def _params(with_variants: bool, with_hints: bool = False):
    out = []
    for a in ASSIGNMENTS:
        names = list(variants(a)) if with_variants else [None]
        if with_hints:
            names = [n for n in names if variant_hints(variants(a)[n])]
        out += [pytest.param(a, n, marks=pytest.mark.xdist_group(a), id=f"{a}-{n}" if n else a)
                for n in names]
    return out


def _scores(tests: dict, student: str) -> dict[str, tuple[float, float]]:
    return {t: (float(r["score"] or 0), float(r["max_score"])) for t, r in tests[student].items()}


@pytest.mark.parametrize("assignment,_", _params(False))
def test_class_is_graded(assignment, _, tmp_path_factory):
    proc, rows, tests, _ws = graded_class(assignment, tmp_path_factory)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    expected = {"reference", "stub", *variants(assignment)}
    assert set(rows) == expected
    assert all(r["status"] in ("graded", "needs-manual-grading") for r in rows.values()), rows


@pytest.mark.parametrize("assignment,_", _params(False))
def test_reference_scores_full_marks(assignment, _, tmp_path_factory):
    _, rows, tests, _ws = graded_class(assignment, tmp_path_factory)
    auto = {t: s for t, s in _scores(tests, "reference").items()
            if tests["reference"][t]["needs_manual_grade"] != "True"}
    assert auto, "no autograded tests"
    lost = {t: s for t, s in auto.items() if s[0] != s[1]}
    assert not lost, f"reference solution lost points: {lost}"


@pytest.mark.parametrize("assignment,_", _params(False))
def test_untouched_stub_scores_zero(assignment, _, tmp_path_factory):
    _, rows, tests, _ws = graded_class(assignment, tmp_path_factory)
    assert float(rows["stub"]["score"]) == 0.0, _scores(tests, "stub")
    assert float(rows["stub"]["max_score"]) == float(rows["reference"]["max_score"]) > 0


@pytest.mark.parametrize("assignment,variant", _params(True))
def test_implementation_loses_exactly_its_tests(assignment, variant, tmp_path_factory):
    _, rows, tests, _ws = graded_class(assignment, tmp_path_factory)
    _, must_fail = parse_variant(variants(assignment)[variant])
    scores = _scores(tests, variant)
    unknown = must_fail - set(scores)
    assert not unknown, f"docstring names tests that do not exist: {unknown}"
    failed = {t for t, (s, m) in scores.items()
              if s < m and tests[variant][t]["needs_manual_grade"] != "True"}
    assert failed == must_fail, (
        f"{variant}: lost points on {sorted(failed)}, expected exactly {sorted(must_fail)}")


@pytest.mark.parametrize("assignment,variant", _params(True, with_hints=True))
def test_feedback_diagnoses_the_mistake(assignment, variant, tmp_path_factory):
    """A variant's ``hint:`` lines (the diagnosis of its mistake) appear in its feedback."""
    _, rows, _tests, ws = graded_class(assignment, tmp_path_factory)
    hints = variant_hints(variants(assignment)[variant])
    import html as html_lib

    text = html_lib.unescape((ws / rows[variant]["feedback"]).read_text(encoding="utf-8"))
    for hint in hints:
        assert hint in text, f"feedback of {variant} lacks the diagnosis {hint!r}"


@pytest.mark.parametrize("assignment,_", _params(False))
def test_feedback_keeps_mathematics_and_hides_tests(assignment, _, tmp_path_factory):
    """Feedback under LANG=C shows non-ASCII mathematics intact and no hidden test code,
    as a browser reads the page: a heading's "·" is written "&#183;", a quote "&quot;", and
    highlighted code is cut into one element per token, so the page is compared as text
    (tags removed, characters decoded). A hidden line that the released notebook also
    shows is no secret and is not looked for."""
    _, rows, _tests, ws = graded_class(assignment, tmp_path_factory)
    page = (ws / rows["reference"]["feedback"]).read_text(encoding="utf-8")
    html = unescape(re.sub(r"<[^>]*>", "", page))
    released = nbformat.read(EXERCISES / assignment / f"{assignment}.ipynb", as_version=4)
    shown = {line.strip() for c in released.cells for line in c.source.splitlines()}
    source = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    text = "\n".join(c.source for c in source.cells if c.cell_type == "markdown")
    for ch in sorted({ch for ch in text if ord(ch) > 127 and ch.isprintable()})[:20]:
        assert ch in html, f"{ch!r} missing from the feedback"
    assert "BEGIN HIDDEN TESTS" not in html
    for cell in source.cells:
        if "### BEGIN HIDDEN TESTS" in cell.source:
            hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
            for line in hidden.strip().splitlines():
                if len(line.strip()) > 12 and line.strip() not in shown:
                    assert line.strip() not in html, f"hidden test line leaked: {line.strip()}"


@pytest.mark.parametrize("assignment,_", _params(False))
def test_nbgrader_export_under_c_locale(assignment, _, tmp_path_factory):
    """nbgrader's own export works on the same workspace (cases/001: LANG=C)."""
    _, rows, _tests, ws = graded_class(assignment, tmp_path_factory)
    out = ws / "nbgrader-export.csv"
    proc = run([sys.executable, "-m", "nbgrader", "export", "--to", str(out)], cwd=ws,
               env=C_LOCALE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    ref = [ln for ln in lines if ",reference," in ln]
    assert ref and rows["reference"]["max_score"] in ref[0] or float(
        rows["reference"]["max_score"]) == float(ref[0].split(",")[-2]), ref
