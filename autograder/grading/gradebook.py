"""The gradebook: nbgrader's ``gradebook.db`` in the workspace, its one URL, and the
queries grading needs (scores and tests of a submission, an assignment's maximum, manual
zeros for tests after a tampering cell)."""

from __future__ import annotations

import functools
from pathlib import Path


def db_url(workspace: Path | str) -> str:
    """The SQLAlchemy URL of the workspace's gradebook (one place; nbgrader's config uses it).

    ``timeout=120``: parallel workers write to one SQLite file and wait for its lock.
    """
    return f"sqlite:///{Path(workspace) / 'gradebook.db'}?timeout=120"


def open_gradebook(workspace: Path):
    """``nbgrader.api.Gradebook`` on the workspace (a context manager)."""
    from nbgrader.api import Gradebook

    return Gradebook(db_url(workspace))


@functools.lru_cache(maxsize=None)
def max_score(workspace: Path, assignment: str) -> float:
    """The assignment's total points, as recorded at release."""
    with open_gradebook(workspace) as gb:
        return float(gb.find_assignment(assignment).max_score)


def zero_tests(workspace: Path, student_id: str, assignment: str, names: set[str]) -> list[str]:
    """Set a manual score of 0 on the autograded tests ``names``; return those zeroed."""
    zeroed = []
    with open_gradebook(workspace) as gb:
        s = gb.find_submission(assignment, student_id)
        for nb in s.notebooks:
            for g in nb.grades:
                if g.name in names and g.cell.cell_type == "code" and g.max_score > 0:
                    g.manual_score = 0.0
                    zeroed.append(g.name)
        gb.db.commit()
    return zeroed
