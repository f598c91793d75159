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


def _reading_order() -> list[str]:
    """The exercise ids in the order the book's table of contents lists them."""
    from conftest import REPO

    toc = (REPO / "_toc.yml").read_text(encoding="utf-8")
    return [line.split("exercises/")[1].split("/")[0] for line in toc.splitlines()
            if "file: exercises/" in line]


def test_notebooks_number_the_exercises_in_reading_order_and_name_their_chapter():
    """Exercise N is the N-th exercise of the book (the ids keep theirs), and each notebook
    names the chapter it practises, as the website's prerequisite does."""
    import yaml
    from conftest import REPO

    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    chapter_of = config["sphinx"]["config"]["course_prerequisites"]
    order = _reading_order()
    assert sorted(order) == ASSIGNMENTS
    for n, a in enumerate(order, start=1):
        intro = nbformat.read(EXERCISES / a / f"{a}.ipynb", as_version=4).cells[0].source
        assert intro.startswith(f"# Exercise {n} · "), (a, intro.splitlines()[0])
        chapter = chapter_of[f"exercises/{a}/{a}"].split("/")[-1]
        assert f"**Practises chapter {int(chapter[:2])}**, *" in intro, a
        assert f"(`chapters/{chapter}.md`)" in intro and (REPO / "chapters" /
                                                              f"{chapter}.md").is_file(), a


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_test_cell_states_its_points_where_learners_look(assignment):
    """The first line of each graded test cell says its points, as nbgrader's metadata."""
    nb = nbformat.read(EXERCISES / assignment / f"{assignment}.ipynb", as_version=4)
    tests = [c for c in nb.cells if c.cell_type == "code" and
             c.metadata.get("nbgrader", {}).get("grade") and
             not c.metadata["nbgrader"].get("solution")]
    assert tests
    for cell in tests:
        points = float(cell.metadata["nbgrader"]["points"])
        shown = f"{points:g} point" + ("" if points == 1 else "s")
        assert cell.source.splitlines()[0] == f"# {shown}", (assignment, cell.source[:60])
