"""Give every exercise the in-notebook check (``autograder.in_notebook``), idempotently.

Run over ``solutions/*/*.ipynb`` (then ``make assignments`` releases them): the set-up cell
(the first code cell) gets the line that loads the extension, and a last read-only cell,
tagged ``skip-execution`` so that ``check`` and ``grade`` never run it, runs ``%check``.

    python tools/add_check_cell.py [NOTEBOOK ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
LOAD = ("# Remembers the code you run, for the check in the last cell (%check).\n"
        "%load_ext autograder.in_notebook")
CHECK = ("# Check your work: every test and knowledge check, on your code as you last ran it\n"
         "# (Run All stops at a failing test: then run this cell on its own).\n"
         "%check")
META = {"deletable": False, "editable": False, "tags": ["skip-execution"],
        "nbgrader": {"grade": False, "grade_id": "check", "locked": True,
                     "schema_version": 3, "solution": False, "task": False}}


def add(nb) -> bool:
    """Add the extension's line and the check cell to ``nb`` where missing; True if changed."""
    changed = False
    setup = next(c for c in nb.cells if c.cell_type == "code")
    if LOAD not in setup.source:
        setup.source = setup.source.rstrip("\n") + "\n\n" + LOAD
        changed = True
    cell = next((c for c in nb.cells if c.get("id") == "check"), None)
    if cell is None:
        cell = nbformat.v4.new_code_cell(CHECK, metadata=META)
        cell.id = "check"
        nb.cells.append(cell)
        changed = True
    elif cell.source != CHECK:
        cell.source = CHECK
        changed = True
    return changed


def main(paths: list[str]) -> int:
    """Update each notebook of ``paths`` (default: every exercise in ``solutions/``)."""
    for path in [Path(p) for p in paths] or sorted(REPO.glob("solutions/*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if add(nb):
            nbformat.write(nb, path)
            print(f"updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
