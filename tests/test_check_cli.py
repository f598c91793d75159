"""``python -m autograder check NOTEBOOK``: one row per test, exit 0 only when all pass."""

from __future__ import annotations

import sys

import nbformat
import pytest
from conftest import run
from submissions import filled_notebook, parse_variant, variants

from autograder.config import EXERCISES, SOLUTIONS

ASSIGNMENTS = sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir())


def _tests(assignment):
    nb = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"
            and not c.metadata["nbgrader"].get("solution")]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_check_passes_on_solution(assignment):
    proc = run([sys.executable, "-m", "autograder", "check",
                str(SOLUTIONS / assignment / f"{assignment}.ipynb")])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [ln for ln in proc.stdout.splitlines() if " pt " in ln]
    assert len(rows) == len(_tests(assignment))
    assert all("PASS" in r for r in rows)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_check_fails_on_learner_notebook(assignment):
    proc = run([sys.executable, "-m", "autograder", "check",
                str(EXERCISES / assignment / f"{assignment}.ipynb")])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = [ln for ln in proc.stdout.splitlines() if " pt " in ln]
    assert len(rows) == len(_tests(assignment))
    assert any("FAIL" in r and "NotImplementedError" in r for r in rows)
    assert "passed," in proc.stdout.splitlines()[-1]


def test_check_reports_the_failing_behaviour(tmp_path):
    cells, _ = parse_variant(variants("ex01_python_attention")["softmax_unstable"])
    path = tmp_path / "ex01.ipynb"
    nbformat.write(filled_notebook("ex01_python_attention", cells), path)
    proc = run([sys.executable, "-m", "autograder", "check", str(path)])
    assert proc.returncode == 1
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("test_softmax_stable"))
    assert "FAIL" in row and "OverflowError" in row
    assert "PASS" in next(ln for ln in proc.stdout.splitlines()
                          if ln.startswith("test_softmax_known_values"))


def test_check_missing_notebook_is_a_clear_error(tmp_path):
    proc = run([sys.executable, "-m", "autograder", "check", str(tmp_path / "nope.ipynb")])
    assert proc.returncode == 2 and "no notebook" in proc.stderr
