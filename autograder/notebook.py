"""Reading nbgrader notebooks: test cells, their points and their results.

Also what ``python -m autograder check`` needs to tell a learner the truth: which
assignment a notebook is (:func:`identify_assignment`, shared with grading), which of its
read-only cells were changed (:func:`restore_fixed_cells`) and what each test's result
means while its hidden part has not run yet (:func:`results`); starting its kernel is
:mod:`autograder.check_kernel`'s, running it cell by cell :mod:`autograder.notebook_run`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import nbformat

from autograder.config import EXERCISES, SOLUTIONS

from autograder.verdicts import (  # noqa: F401 - re-exported: the names notebook readers use
    HIDDEN_BEGIN,
    Execution,
    TestResult,
    cell_errors,
    defines,
    error_location,
    first_error_line,
    grade_id,
    is_fixed_cell,
    is_manual_cell,
    is_test_cell,
    nbgrader_meta,
    normalise,
    only_docstring,
    results,
    test_summary,
)


def tests_with_hidden_parts(assignment: str, source_dir: Path | None = None) -> set[str] | None:
    """grade_ids of the test cells of ``assignment`` that have a hidden part in the source
    notebook (``solutions/``), or None when the source notebook is not there."""
    path = Path(source_dir or SOLUTIONS) / assignment / f"{assignment}.ipynb"
    if not path.is_file():
        return None
    nb = nbformat.read(path, as_version=4)
    return {grade_id(c) for c in nb.cells if is_test_cell(c) and HIDDEN_BEGIN in c.source}


def put_hidden_tests_back(nb, assignment: str, source_dir: Path | None = None) -> None:
    """Each test cell of ``nb`` (in place) as the source notebook of ``assignment`` has it,
    hidden parts included: what grading runs."""
    path = Path(source_dir or SOLUTIONS) / assignment / f"{assignment}.ipynb"
    whole = {grade_id(c): c.source for c in nbformat.read(path, as_version=4).cells
             if is_test_cell(c)}
    for cell in nb.cells:
        if is_test_cell(cell) and grade_id(cell) in whole:
            cell.source = whole[grade_id(cell)]


# --- Which assignment a notebook is, and how it differs from its released version ---------

def _released(folder: str) -> dict[str, dict[str, str]]:
    """assignment -> {grade_id: normalised source} of the read-only cells of its release,
    read again when a file of it changed (``check --warm``'s host lives on between checks,
    and in this repository a learner's notebook is the release's file)."""
    paths = [p for p in sorted(Path(folder).glob("*/*.ipynb")) if p.stem == p.parent.name]
    stamp = []
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            continue
        stamp.append((str(path), st.st_size, st.st_mtime_ns))
    return _released_files(tuple(stamp))


@lru_cache(maxsize=16)
def _released_files(stamp: tuple[tuple[str, int, int], ...]) -> dict[str, dict[str, str]]:
    """:func:`_released` of the files ``stamp`` names (path, size, time of change)."""
    out = {}
    for name, _, _ in stamp:
        path = Path(name)
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception:  # noqa: BLE001 - a broken release folder identifies nothing
            continue
        out[path.stem] = {grade_id(c): normalise(c.source) for c in nb.cells if is_fixed_cell(c)}
    return out


def released_notebook(assignment: str, release_dir: Path | None = None):
    """The released (learner) notebook of ``assignment``, or None when it is not there."""
    path = Path(release_dir or EXERCISES) / assignment / f"{assignment}.ipynb"
    return nbformat.read(path, as_version=4) if path.is_file() else None


def identify_assignment(nb, release_dir: Path | None = None) -> str | None:
    """Which assignment ``nb`` is, judged by what it holds, not by its name.

    Every released assignment is scored by how many of its read-only cells (markdown,
    setup and test cells) appear in ``nb`` with the same grade_id *and* the same source.
    Assignments share grade_ids (``softmax``, ``test_kc1``, ...) but not these sources, so
    an ex02 notebook is ex02 even though most of its ids also occur in ex01. Returns the
    best-scoring assignment when it matches at least 3 cells and more than any other, else
    None (not a notebook of this course, or too damaged to tell).

    Args:
        nb: a notebook (``nbformat.NotebookNode``, version 4).
        release_dir: the release folder, ``<assignment>/<assignment>.ipynb`` inside
            (default ``exercises/``).
    """
    mine = {}
    for c in nb.get("cells", []):
        gid = grade_id(c)
        if gid is not None and not nbgrader_meta(c).get("solution"):
            mine.setdefault(gid, normalise(c.get("source", "")))
    scores = sorted(
        ((sum(mine.get(gid) == src for gid, src in fixed.items()), a)
         for a, fixed in _released(str(Path(release_dir or EXERCISES).resolve())).items()),
        reverse=True)
    if not scores or scores[0][0] < 3 or (len(scores) > 1 and scores[1][0] == scores[0][0]):
        return None
    return scores[0][1]


@dataclass
class CellChange:
    """A read-only cell the learner changed: grading puts the released version back."""

    grade_id: str
    kind: str  # "edited" or "missing"
    is_test: bool


def restore_fixed_cells(nb, released) -> list[CellChange]:
    """Put the released version of every read-only cell back into ``nb`` (in place), as
    grading does, and say which ones were edited or missing. A missing cell is inserted
    after the cell that precedes it in the release."""
    changes = []
    position = {grade_id(c): i for i, c in enumerate(nb.cells) if grade_id(c)}
    previous = None
    for rc in released.cells:
        gid = grade_id(rc)
        if gid is None:
            continue
        if is_fixed_cell(rc):
            if gid in position:
                cell = nb.cells[position[gid]]
                if normalise(cell.source) != normalise(rc.source):
                    changes.append(CellChange(gid, "edited", is_test_cell(rc)))
                    cell.source = rc.source
            else:
                at = position[previous] + 1 if previous in position else len(nb.cells)
                nb.cells.insert(at, nbformat.from_dict(dict(rc)))
                changes.append(CellChange(gid, "missing", is_test_cell(rc)))
                position = {grade_id(c): i for i, c in enumerate(nb.cells) if grade_id(c)}
        previous = gid
    return changes
