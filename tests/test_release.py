"""exercises/ is what nbgrader generate_assignment makes of solutions/ now, and both are valid."""

from __future__ import annotations

import json
import sys

import nbformat
import pytest
from conftest import run

import autograder
from autograder.config import EXERCISES, SOLUTIONS

ASSIGNMENTS = list(autograder.ASSIGNMENTS)  # the registry: exercises found in solutions/


def test_every_assignment_is_released():
    assert ASSIGNMENTS, "no solutions/"
    assert sorted(p.name for p in EXERCISES.iterdir() if p.is_dir()) == ASSIGNMENTS


@pytest.mark.slow  # nbgrader generate_assignment for every exercise
def test_exercises_match_a_fresh_release(tmp_path):
    """Drift test: regenerate every learner notebook and compare with the committed one."""
    proc = run([sys.executable, "-m", "autograder", "release", "--to", str(tmp_path)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for a in ASSIGNMENTS:
        fresh = json.loads((tmp_path / a / f"{a}.ipynb").read_text(encoding="utf-8"))
        committed = json.loads((EXERCISES / a / f"{a}.ipynb").read_text(encoding="utf-8"))
        assert committed == fresh, (
            f"exercises/{a} is out of date: run `make assignments` and commit the result")


@pytest.mark.parametrize("path", sorted(SOLUTIONS.rglob("*.ipynb")) +
                         sorted(EXERCISES.rglob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_is_valid_and_clean(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        f"{path} has outputs: sources are committed clean"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_learner_version_has_no_solutions_or_hidden_tests(assignment):
    text = (EXERCISES / assignment / f"{assignment}.ipynb").read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
    assert "raise NotImplementedError()" in text
