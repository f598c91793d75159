"""nbgrader's feedback reads a notebook's grades and comments at once (issue 25).

nbgrader's ``GetGrades`` preprocessor (``generate_feedback``) asks the gradebook for each
graded cell's grade and each solution cell's comment in a query of its own, and loads each
grade's maximum in another: about 40 % of the CPU of an ex01 feedback page, 35 queries.
:func:`apply` makes it read the notebook's grades and comments in a few queries, at its
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
        cell.metadata.nbgrader["score"] = grade.score
        cell.metadata.nbgrader["points"] = grade.max_score

    def _get_comment(self, cell, resources) -> None:
        comment = _read(self)[1].get(cell.metadata["nbgrader"]["grade_id"])
        if comment is None:
            return own_comment(self, cell, resources)
        cell.metadata.nbgrader["comment"] = comment.comment

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
    """({cell name: ``Grade``}, {cell name: ``Comment``}) of ``student``'s ``notebook`` of
    ``assignment`` in the gradebook ``gb``, each with its score, maximum or comment loaded.
    A name that is a grade cell's and a task cell's is the grade cell's, as in nbgrader's
    ``find_grade`` (a solution cell's, for ``find_comment``). Empty when there is none."""
    from nbgrader.api import (Assignment, Comment, Grade, GradeCell, Notebook, SolutionCell,
                              Student, SubmittedAssignment, SubmittedNotebook, TaskCell)
    from sqlalchemy.orm import selectinload, undefer

    ids = [row[0] for row in gb.db.query(SubmittedNotebook.id)
           .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
           .join(SubmittedAssignment, SubmittedAssignment.id == SubmittedNotebook.assignment_id)
           .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
           .join(Student, Student.id == SubmittedAssignment.student_id)
           .filter(Notebook.name == notebook, Assignment.name == assignment,
                   Student.id == student)]
    grades = gb.db.query(Grade).filter(Grade.notebook_id.in_(ids)).options(
        undefer(Grade.score), undefer(Grade.max_score),
        selectinload(Grade.cell).selectin_polymorphic([GradeCell, TaskCell])).all()
    comments = gb.db.query(Comment).filter(Comment.notebook_id.in_(ids)).options(
        undefer(Comment.comment),
        selectinload(Comment.cell).selectin_polymorphic([SolutionCell, TaskCell])).all()
    return (_by_name(grades, GradeCell, TaskCell), _by_name(comments, SolutionCell, TaskCell))


def _by_name(rows, first, then) -> dict:
    """``rows`` by their cell's name: those whose cell is a ``first`` over a ``then``."""
    found = {r.cell.name: r for r in rows if type(r.cell) is then}
    found.update({r.cell.name: r for r in rows if type(r.cell) is first})
    return found
