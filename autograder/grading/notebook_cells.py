"""nbgrader's per-cell gradebook work on a notebook's cells, done once per notebook (issue 25).

Two of nbgrader's preprocessors open a gradebook for one notebook and then work cell by
cell:

- ``OverwriteCells`` (autograde) looks each cell's source cell up, and each graded cell's
  points, in a query of its own: about 37 queries and 35-39 ms of CPU for an ex01 notebook
  (this machine). Its gradebook here (:class:`CellsReadAtOnce`) reads the notebook's source
  cells and graded cells in three queries, at the first lookup, and answers every cell from
  them: 8-10 ms.
- ``SaveCells`` (release, ``generate_assignment``) records each cell in a transaction of its
  own: 47 commits, each written to disk, for ex01 (its release took 0.33-0.48 s, 0.22-0.32
  s now). Its gradebook here (:class:`OneTransaction`) turns each of nbgrader's commits
  into a flush, which writes the same statements in the same order, and commits once when
  the notebook is recorded: a notebook's cells are recorded whole or not at all.

nbgrader's own code still decides every value; a name the notebook's rows lack is asked of
nbgrader's own lookup, which raises its own error. :func:`apply` sets these gradebooks in
the two preprocessors' modules (once per process: :func:`autograder.grading.speedups.apply`).
"""

from __future__ import annotations


def apply() -> None:
    """Make ``OverwriteCells`` and ``SaveCells`` open nbgrader's ``Gradebook`` with
    :class:`CellsReadAtOnce` and :class:`OneTransaction` over it (nbgrader is imported
    here, not with this module)."""
    import nbgrader.preprocessors.overwritecells as overwritecells
    import nbgrader.preprocessors.savecells as savecells
    from nbgrader.api import Gradebook

    overwritecells.Gradebook = type("CellsReadAtOnceGradebook", (CellsReadAtOnce, Gradebook),
                                    {})
    savecells.Gradebook = type("OneTransactionGradebook", (OneTransaction, Gradebook), {})


class CellsReadAtOnce:
    """Over nbgrader's ``Gradebook`` (:func:`apply`): its ``find_source_cell`` and
    ``find_graded_cell`` answer from the cells of the notebook asked about, read at once (the
    same objects, in the same session, as nbgrader's queries return). Opened for one
    notebook by ``OverwriteCells``, which changes nothing in the gradebook."""

    _read: tuple | None = None

    def find_source_cell(self, name: str, notebook: str, assignment: str):
        found = self._cells(notebook, assignment)[0].get(name)
        return found if found is not None else \
            super().find_source_cell(name, notebook, assignment)

    def find_graded_cell(self, name: str, notebook: str, assignment: str):
        found = self._cells(notebook, assignment)[1].get(name)
        return found if found is not None else \
            super().find_graded_cell(name, notebook, assignment)

    def _cells(self, notebook: str, assignment: str) -> tuple[dict, dict]:
        if self._read is None or self._read[0] != (notebook, assignment):
            self._read = ((notebook, assignment), notebook_cells(self, notebook, assignment))
        return self._read[1]


def notebook_cells(gb, notebook: str, assignment: str) -> tuple[dict, dict]:
    """({name: ``SourceCell``}, {name: ``GradeCell``, or ``TaskCell`` where no grade cell
    has the name}) of ``notebook`` of ``assignment``: what nbgrader's ``find_source_cell``
    and ``find_graded_cell`` (a grade cell first, then a task cell) find, in three queries."""
    from nbgrader.api import Assignment, GradeCell, Notebook, SourceCell, TaskCell

    def of(kind) -> dict:
        return {cell.name: cell for cell in gb.db.query(kind)
                .join(Notebook, Notebook.id == kind.notebook_id)
                .join(Assignment, Assignment.id == Notebook.assignment_id)
                .filter(Notebook.name == notebook, Assignment.name == assignment)}

    return of(SourceCell), {**of(TaskCell), **of(GradeCell)}


class OneTransaction:
    """Over nbgrader's ``Gradebook`` (:func:`apply`): its session's ``commit()`` only
    flushes (the statements are written, in order, in one transaction) until the ``with``
    block ends: then it commits once, or rolls back when the block raised. Opened for one
    notebook by ``SaveCells``, and by ``SaveAutoGrades``
    (:mod:`autograder.grading.notebook_grades`). nbgrader's rollback on an error (its
    ``InvalidEntry``) undoes the whole notebook's changes."""

    def __enter__(self):
        self.db = _FlushOnCommit(self.db)
        return super().__enter__()

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        session, self.db = self.db.session, self.db.session
        try:
            if exc_type is None:
                session.commit()
            else:
                session.rollback()
        finally:
            super().__exit__(exc_type, exc_value, traceback)


class _FlushOnCommit:
    """A session whose ``commit()`` is a ``flush()``; all else is the session's own."""

    def __init__(self, session):
        self.session = session

    def commit(self) -> None:
        self.session.flush()

    def __getattr__(self, name: str):
        return getattr(self.session, name)
