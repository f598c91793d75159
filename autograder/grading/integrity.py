"""Integrity of a submission against its released notebook: the locked cells the learner
changed (nbgrader restores them: status ``restored-tests``) and the learner's own cells that
modify the modules or the shell the tests use (status ``tampering``)."""

from __future__ import annotations

import nbformat

from autograder.config import EXERCISES
from autograder.grading.tampering import suspicious
from autograder.notebook import nbgrader_meta

_released: dict[str, dict] = {}


def released_cells(assignment: str) -> dict:
    """grade_id -> cell of the learner version in ``exercises/``, in notebook order."""
    if assignment not in _released:
        nb = nbformat.read(EXERCISES / assignment / f"{assignment}.ipynb", as_version=4)
        _released[assignment] = {nbgrader_meta(c)["grade_id"]: c for c in nb.cells
                                 if nbgrader_meta(c).get("grade_id")}
    return _released[assignment]


def grade_ids(nb) -> set[str]:
    """The nbgrader grade_ids of a notebook's cells."""
    return {nbgrader_meta(c).get("grade_id") for c in nb.cells if nbgrader_meta(c)} - {None}


def restored_cells(nb, assignment: str) -> list[str]:
    """What the learner changed in the notebook's structure: locked cells edited, removed,
    turned into another cell type or duplicated, and cells moved out of order."""
    released = released_cells(assignment)
    theirs: dict[str, list] = {}
    order = []
    for c in nb.cells:
        gid = nbgrader_meta(c).get("grade_id")
        if gid:
            theirs.setdefault(gid, []).append(c)
            order.append(gid)
    changes = []
    for gid, cell in released.items():
        meta = nbgrader_meta(cell)
        mine = theirs.get(gid, [])
        if len(mine) > 1:
            changes.append(f"{gid} appears {len(mine)} times")
        if not meta.get("locked") or meta.get("solution"):
            continue
        if not mine:
            changes.append(f"{gid} deleted")
        elif mine[0].cell_type != cell.cell_type:
            changes.append(f"{gid} turned into {mine[0].cell_type}")
        elif mine[0].source.strip() != cell.source.strip():
            changes.append(f"{gid} edited")
    rank = {gid: i for i, gid in enumerate(released)}
    known = [rank[g] for g in dict.fromkeys(order) if g in rank]
    if known != sorted(known):
        changes.append("cells reordered")
    return changes


def restore_metadata(nb, assignment: str) -> list[str]:
    """Give every cell the nbgrader metadata of the release, in place: a cell whose
    grade_id the release does not have (an extra grade cell) becomes a plain cell, a cell
    whose grade, solution, locked or points changed (a solution cell turned into a grade
    cell worth 10 points) gets the released values back. Returns what was changed."""
    released = released_cells(assignment)
    changes = []
    for c in nb.cells:
        meta = nbgrader_meta(c)
        if not meta:
            continue
        gid = meta.get("grade_id")
        if gid not in released:
            if meta.get("grade") or meta.get("locked") or meta.get("solution") or \
                    meta.get("task"):
                changes.append(f"{gid or 'a cell'} is not in the release")
            del c.metadata["nbgrader"]
            continue
        mine = nbgrader_meta(released[gid])
        keys = ("grade", "solution", "locked", "points", "task")
        if any(meta.get(k) != mine.get(k) for k in keys):
            changes.append(f"metadata of {gid} changed")
            c.metadata["nbgrader"] = dict(mine)
    return changes


def learner_tampering(nb, assignment: str) -> tuple[str | None, list[str]]:
    """(grade_id of the released cell before the first of the learner's cells that modifies
    a module or the shell, what that cell does); (None, []) when there is none."""
    released = released_cells(assignment)
    anchor = None
    for c in nb.cells:
        meta = nbgrader_meta(c)
        gid = meta.get("grade_id")
        if gid in released:
            anchor = gid
        editable = meta.get("solution") or gid not in released
        if c.cell_type == "code" and editable and not nbgrader_meta(released.get(gid, c)).get(
                "locked"):
            found = suspicious(c.source)
            if found:
                return anchor, found
    return None, []
