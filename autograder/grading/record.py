"""One record: nbgrader's gradebook holds every score; ``grades.csv``, ``tests.csv`` and the
summary are derived from it, together with the workspace's side table (``STATE_CSV``: our
statuses, details and regrade keys, which the gradebook has no place for).

So a manual score, a late penalty, an extension or a regrade made with nbgrader's own
commands (``nbgrader autograde --force``, formgrader) shows in ``grades.csv`` after the next
:func:`rewrite_records`, which ``grade``, ``manual score`` and ``export`` run.
"""

from __future__ import annotations

import json
from pathlib import Path

from autograder.exercises import exercise_ids
from autograder.grading.class_report import write_all
from autograder.grading.gradebook import exists as gradebook_exists
from autograder.grading.gradebook import open_gradebook
from autograder.grading.manual import reconcile
from autograder.grading.results import PRIORITY, Row, Status, load_state, save_rows
from autograder.grading.summary import write_summary

NOTE = "note"  # the key of a free-text prefix in a row's events (e.g. nbformat 3 converted)


def combine(events: dict[Status, str]) -> tuple[Status, str]:
    """The status (the most serious event, else ``graded``) and the detail listing all."""
    status = next((p for p in PRIORITY if p in events), Status.GRADED)
    detail = "; ".join(f"{k}: {v}" if k != status else v for k, v in
                       sorted(events.items(), key=lambda kv: PRIORITY.index(kv[0])))
    return status, detail


def add_note(row: Row, note: str) -> None:
    """Put ``note`` (a fact about the submission, such as which of its folder's notebooks
    was graded) before ``row``'s detail, and keep it in its events for :func:`score_from_gradebook`."""
    if not note:
        return
    events = json.loads(row.events or "{}")
    events[NOTE] = "; ".join(filter(None, [note, events.get(NOTE, "")]))
    row.events = json.dumps(events)
    row.detail = f"{note}; {row.detail}" if row.detail else note


def _loaded(gb):
    """nbgrader's query of submissions in ``gb``, with what :func:`score_from_gradebook`
    reads loaded eagerly: five queries (nbgrader loads each score, maximum and cell lazily,
    and each cell's kind in a query of its own: some forty queries per row otherwise)."""
    from nbgrader.api import Grade, GradeCell, SubmittedAssignment, SubmittedNotebook, TaskCell
    from sqlalchemy.orm import joinedload, selectinload, undefer

    return gb.db.query(SubmittedAssignment).options(
        undefer(SubmittedAssignment.score), undefer(SubmittedAssignment.max_score),
        undefer(SubmittedAssignment.late_submission_penalty),
        undefer(SubmittedAssignment.needs_manual_grade),
        joinedload(SubmittedAssignment.assignment), joinedload(SubmittedAssignment.student),
        selectinload(SubmittedAssignment.notebooks).selectinload(SubmittedNotebook.grades)
        .options(undefer(Grade.max_score), selectinload(Grade.cell)
                 .selectin_polymorphic([GradeCell, TaskCell])))  # their cell_type with them


def submissions(gb, batch: int = 200):
    """Every submission in the gradebook ``gb``: ((student id, assignment), nbgrader's
    ``SubmittedAssignment``) pairs, loaded in five queries per ``batch`` of submissions. A
    batch is let go when the next is read: the grader's memory holds ``batch`` submissions'
    objects, not the class's (50 MiB for a class of 2,000)."""
    for s in _loaded(gb).yield_per(batch):
        yield (s.student.id, s.assignment.name), s


def submission(gb, assignment: str, student_id: str):
    """``student_id``'s submission of ``assignment`` in the gradebook ``gb``, loaded as
    :func:`submissions` loads them (what a worker reads after each grade); None when the
    gradebook has none."""
    from nbgrader.api import Assignment, Student, SubmittedAssignment

    return (_loaded(gb)
            .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
            .join(Student, Student.id == SubmittedAssignment.student_id)
            .filter(Assignment.name == assignment, Student.id == student_id).one_or_none())


def score_from_gradebook(row: Row, gb, loaded: dict | None = None) -> bool:
    """Set ``row``'s score, maximum, late penalty, tests, status and detail from the gradebook
    ``gb`` (an open ``nbgrader.api.Gradebook``) and its grading ``events``. Returns False,
    leaving the row as it is, when the row has no scores in the gradebook. ``loaded``: the
    gradebook's :func:`submissions`, for filling many rows."""
    if not row.scored:
        return False
    if loaded is not None:
        s = loaded.get(row.key)
    else:
        s = submission(gb, row.assignment, row.student_id)
    if s is None:
        return False
    tests = []
    for nb in s.notebooks:
        for g in nb.grades:
            manual = g.cell.cell_type == "markdown" or g.auto_score is None
            tests.append({"student_id": row.student_id, "assignment": row.assignment,
                          "test": g.name, "score": g.score, "max_score": g.max_score,
                          "needs_manual_grade": g.needs_manual_grade,
                          "kind": "manual" if manual else "autograded"})
    # nbgrader keeps the late penalty apart from the score (its export does the same).
    penalty = float(s.late_submission_penalty or 0.0)
    row.score, row.max_score = max(0.0, float(s.score) - penalty), float(s.max_score)
    row.late_penalty, row.tests = penalty, tests
    events = {(k if k == NOTE else Status(k)): v
              for k, v in json.loads(row.events or "{}").items()}
    note = events.pop(NOTE, "")
    late = float(s.total_seconds_late or 0.0)
    if late > 0:
        events[Status.LATE] = (f"submitted {late / 3600:.1f} h after the due date; "
                               f"{float(s.score):g} points before nbgrader's late penalty")
    if s.needs_manual_grade:
        events[Status.NEEDS_MANUAL_GRADING] = (
            "written answers wait for an instructor (python -m autograder manual)")
    row.status, row.detail = combine(events)
    if note:
        row.detail = f"{note}; {row.detail}" if row.detail else note
    return True


def course_assignments(recorded: set[str]) -> frozenset[str]:
    """The assignments a row may be of: the course's exercises
    (:func:`autograder.exercises.exercise_ids`) and those of the gradebook (which a run
    fills with exercises only). A row of any other (an older run's row for a folder named
    ``=HYPERLINK(...)``) is dropped: no export, report or file name holds its name."""
    return frozenset(exercise_ids()) | frozenset(recorded)


def derive_rows(workspace: Path, rows: dict[tuple[str, str], Row]) -> dict[tuple[str, str], Row]:
    """Bring ``rows`` (the side table's) up to date with the gradebook, in place; first
    drop the rows of folders that are no assignment (:func:`course_assignments`), then
    keep the manual scores of written answers a regrade did not change
    (:func:`autograder.grading.manual.reconcile`). A row with no scores in the gradebook
    (a folder refused at the door, a notebook not graded) gets its assignment's maximum,
    as the export gives it."""
    if rows and not gradebook_exists(workspace):
        for key in [k for k in rows if k[1] not in course_assignments(set())]:
            del rows[key]  # a folder that is no assignment, in an older side table
    if rows and gradebook_exists(workspace):
        with open_gradebook(workspace) as gb:
            known = course_assignments({a.name for a in gb.assignments})
            for key in [k for k in rows if k[1] not in known]:
                del rows[key]
            reconcile(workspace, gb)
            for key, s in submissions(gb):
                if key in rows:
                    score_from_gradebook(rows[key], gb, {key: s})
            if any(not row.max_score for row in rows.values()):
                maxima = {a.name: float(a.max_score) for a in gb.assignments}
                for row in rows.values():
                    row.max_score = row.max_score or maxima.get(row.assignment, 0.0)
    return rows


def rewrite_records(workspace: Path) -> tuple[dict[tuple[str, str], Row], list[str]]:
    """Rewrite ``grades.csv``, ``tests.csv``, the summary and the class reports
    (:mod:`~autograder.grading.class_report`) from the gradebook and the side table; return
    the rows and the summary's printable lines."""
    workspace = Path(workspace).resolve()
    rows = derive_rows(workspace, load_state(workspace))
    save_rows(workspace, rows)
    lines = write_summary(workspace, [r.to_dict() for r in rows.values()],
                          [t for r in rows.values() for t in r.tests])
    lines += [f"class report: {p}" for p in write_all(workspace, rows.values())]
    return rows, lines
