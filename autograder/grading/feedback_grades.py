"""nbgrader's feedback reads a notebook's grades and comments at once (issue 25).

nbgrader's ``GetGrades`` preprocessor (``generate_feedback``) asks the gradebook for each
graded cell's grade and each solution cell's comment in a query of its own, and loads each
grade's maximum in another: about 40 % of the CPU of an ex01 feedback page, 33 queries.
:func:`apply` makes it read the notebook's grades and comments in three queries, at its
first cell, and answer every cell from them. What it writes into each cell (score, points,
comment) comes from the same rows and columns of the gradebook, so the page is unchanged;
a cell the rows do not have is asked of nbgrader's own lookup, which raises its own error.
"""

from __future__ import annotations


def apply() -> None:
    """Patch nbgrader's ``GetGrades`` (once per process: :func:`autograder.grading.
    speedups.apply` calls it)."""
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


def grades_and_comments(gb, notebook: str, assignment: str, student: str) -> tuple[dict, dict]:
    """({cell name: (score, maximum)}, {cell name: comment}) of ``student``'s ``notebook``
    of ``assignment`` in the gradebook ``gb``: the columns nbgrader's ``Grade.score``,
    ``Grade.max_score`` and ``Comment.comment`` (the same SQL), in three queries. A name
    that is a grade cell's and a task cell's is the grade cell's, as in nbgrader's
    ``find_grade`` (a solution cell's, for ``find_comment``). Empty when there is none."""
    from nbgrader.api import (Assignment, BaseCell, Comment, Grade, Notebook, Student,
                              SubmittedAssignment, SubmittedNotebook)

    ids = [row[0] for row in gb.db.query(SubmittedNotebook.id)
           .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
           .join(SubmittedAssignment, SubmittedAssignment.id == SubmittedNotebook.assignment_id)
           .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
           .join(Student, Student.id == SubmittedAssignment.student_id)
           .filter(Notebook.name == notebook, Assignment.name == assignment,
                   Student.id == student)]
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
