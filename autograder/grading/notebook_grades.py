"""nbgrader's per-cell gradebook work, done once per notebook (issue 25).

Two of nbgrader's preprocessors look each graded cell's grade and each solution cell's
comment up in a query of its own:

- ``GetGrades`` (the feedback) also loads each grade's maximum in another query: 33
  statements and about 40 % of the CPU of an ex01 feedback page. :func:`apply` makes it
  read the notebook's scores, maximums and comments in three queries, at its first cell, and
  answer every cell from them (:func:`grades_and_comments`: the same SQL expressions as
  nbgrader's column properties, so the page is unchanged).
- ``SaveAutoGrades`` (autograde) also commits after each cell: an ex01 notebook's scores
  took 17 transactions, each written to disk. :func:`apply` gives it a gradebook
  (:class:`GradesReadAtOnce` over :class:`autograder.grading.notebook_cells.OneTransaction`)
  that finds the notebook's grades and comments in three queries and commits once, after
  its last cell; nbgrader's own code still decides every value it writes. A notebook's
  autograded scores are saved whole or not at all.

A cell the gradebook's rows do not have is asked of nbgrader's own lookup, which raises its
own error.
"""

from __future__ import annotations

from autograder.grading.notebook_cells import OneTransaction


def apply() -> None:
    """Patch nbgrader's ``GetGrades`` and the gradebook ``SaveAutoGrades`` opens (once per
    process: :func:`autograder.grading.speedups.apply` calls it)."""
    import nbgrader.preprocessors.saveautogrades as saveautogrades
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import GetGrades

    own_score, own_comment = GetGrades._get_score, GetGrades._get_comment

    def _get_score(self, cell, resources) -> None:
        grade = _read(self)[0].get(cell.metadata["nbgrader"]["grade_id"])
        if grade is None:
            return own_score(self, cell, resources)
        cell.metadata.nbgrader["score"], cell.metadata.nbgrader["points"] = grade

    def _get_comment(self, cell, resources) -> None:
        comments = _read(self)[1]
        name = cell.metadata["nbgrader"]["grade_id"]
        if name not in comments:
            return own_comment(self, cell, resources)
        cell.metadata.nbgrader["comment"] = comments[name]

    GetGrades._get_score, GetGrades._get_comment = _get_score, _get_comment
    saveautogrades.Gradebook = type("GradesReadAtOnceGradebook",
                                    (GradesReadAtOnce, OneTransaction, Gradebook), {})


def _read(pre) -> tuple[dict, dict]:
    """The grades and the comments of the notebook ``pre`` (a ``GetGrades``) is converting,
    by cell name, read once per gradebook it opens (one per notebook)."""
    kept = getattr(pre, "_autograder_read", None)
    if kept is not None and kept[0] is pre.gradebook:  # held: no other object has its id
        return kept[1]
    read = grades_and_comments(pre.gradebook, pre.notebook_id, pre.assignment_id,
                               pre.student_id)
    pre._autograder_read = (pre.gradebook, read)
    return read


class GradesReadAtOnce:
    """Over nbgrader's ``Gradebook`` (:func:`apply`): its ``find_grade`` and
    ``find_comment`` answer from the grades and comments of the student's notebook asked
    about, read at once as objects (to be changed). Opened for one notebook by
    ``SaveAutoGrades``."""

    _read: tuple | None = None

    def find_grade(self, name: str, notebook: str, assignment: str, student: str):
        found = self._objects(notebook, assignment, student)[0].get(name)
        return found if found is not None else \
            super().find_grade(name, notebook, assignment, student)

    def find_comment(self, name: str, notebook: str, assignment: str, student: str):
        found = self._objects(notebook, assignment, student)[1].get(name)
        return found if found is not None else \
            super().find_comment(name, notebook, assignment, student)

    def _objects(self, *key: str) -> tuple[dict, dict]:
        if self._read is None or self._read[0] != key:
            self._read = (key, _objects(self, *key))
        return self._read[1]


def _notebook_ids(gb, notebook: str, assignment: str, student: str) -> list:
    """The ids of ``student``'s submitted ``notebook`` of ``assignment`` (one, or none)."""
    from nbgrader.api import Assignment, Notebook, Student, SubmittedAssignment, SubmittedNotebook

    return [row[0] for row in gb.db.query(SubmittedNotebook.id)
            .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
            .join(SubmittedAssignment, SubmittedAssignment.id == SubmittedNotebook.assignment_id)
            .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
            .join(Student, Student.id == SubmittedAssignment.student_id)
            .filter(Notebook.name == notebook, Assignment.name == assignment,
                    Student.id == student)]


def _objects(gb, notebook: str, assignment: str, student: str) -> tuple[dict, dict]:
    """({cell name: ``Grade``}, {cell name: ``Comment``}) of the notebook, as nbgrader's
    ``find_grade`` and ``find_comment`` would find them (see :func:`_by_name`)."""
    from nbgrader.api import BaseCell, Comment, Grade

    ids = _notebook_ids(gb, notebook, assignment, student)
    grades = gb.db.query(BaseCell.type, BaseCell.name, Grade) \
        .join(BaseCell, BaseCell.id == Grade.cell_id).filter(Grade.notebook_id.in_(ids)).all()
    comments = gb.db.query(BaseCell.type, BaseCell.name, Comment) \
        .join(BaseCell, BaseCell.id == Comment.cell_id).filter(Comment.notebook_id.in_(ids)).all()
    return (_by_name(grades, "GradeCell", "TaskCell"),
            _by_name(comments, "SolutionCell", "TaskCell"))


def grades_and_comments(gb, notebook: str, assignment: str, student: str) -> tuple[dict, dict]:
    """({cell name: (score, maximum)}, {cell name: comment}) of ``student``'s ``notebook``
    of ``assignment`` in the gradebook ``gb``: the columns nbgrader's ``Grade.score``,
    ``Grade.max_score`` and ``Comment.comment`` (the same SQL), in three queries. A name
    that is a grade cell's and a task cell's is the grade cell's, as in nbgrader's
    ``find_grade`` (a solution cell's, for ``find_comment``). Empty when there is none."""
    from nbgrader.api import BaseCell, Comment, Grade

    ids = _notebook_ids(gb, notebook, assignment, student)
    grades = gb.db.query(BaseCell.type, BaseCell.name, Grade.score, Grade.max_score) \
        .join(BaseCell, BaseCell.id == Grade.cell_id).filter(Grade.notebook_id.in_(ids)).all()
    comments = gb.db.query(BaseCell.type, BaseCell.name, Comment.comment) \
        .join(BaseCell, BaseCell.id == Comment.cell_id).filter(Comment.notebook_id.in_(ids)).all()
    return (_by_name(grades, "GradeCell", "TaskCell"),
            _by_name(comments, "SolutionCell", "TaskCell"))


def _by_name(rows, first: str, then: str) -> dict:
    """``rows`` (cell type, cell name, *values) as {name: values}, a ``first`` cell's
    values over a ``then`` cell's of the same name; a single value alone."""
    found: dict = {}
    for kind in (then, first):
        for cell_type, name, *values in rows:
            if cell_type == kind:
                found[name] = values[0] if len(values) == 1 else tuple(values)
    return found
