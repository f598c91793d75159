"""The file to upload to a learning platform: ``python -m autograder export``.

One row per learner of the roster and per assignment, derived from the gradebook and the
side table (:mod:`~autograder.grading.record`) at the moment of export: score (after the late
penalty), maximum, status, late penalty and detail. A learner whose notebook could not be
graded keeps that status and 0 points; a learner of the roster with no submission is
``missing``. nbgrader's own ``nbgrader export`` knows neither (it drops the first and gives
the second a plain 0).
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.gradebook import exists, open_gradebook
from autograder.grading.record import course_assignments, rewrite_records
from autograder.grading.results import spreadsheet_safe, write_csv

EXPORT_FIELDS = ["student_id", "assignment", "score", "max_score", "late_penalty", "status",
                 "detail"]
MISSING = "missing"


def read_roster(path: Path) -> list[str]:
    """Student ids from a roster file: a CSV with a ``student_id`` (or nbgrader's ``id``)
    column, or one id per line. Raises ValueError for a CSV with neither column."""
    text = Path(path).read_text(encoding="utf-8-sig")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    header = [h.strip() for h in lines[0].split(",")]
    if len(header) == 1 and header[0] not in ("student_id", "id"):
        return list(dict.fromkeys(lines))
    column = next((h for h in ("student_id", "id") if h in header), None)
    if column is None:
        raise ValueError(f"roster {path} has no 'student_id' or 'id' column (it has "
                         f"{', '.join(header)})")
    rows = csv.DictReader(text.splitlines())
    return list(dict.fromkeys(r[column].strip() for r in rows if (r.get(column) or "").strip()))


def gradebook_students_and_assignments(workspace: Path) -> tuple[list[str], dict[str, float]]:
    """(student ids, assignment -> max score) recorded in the workspace's gradebook."""
    if not exists(workspace):
        return [], {}

    with open_gradebook(workspace) as gb:
        return ([s.id for s in gb.students],
                {a.name: float(a.max_score) for a in gb.assignments})


def class_table(workspace: Path, roster: Path | None = None) -> tuple[list[dict], list[str]]:
    """(the export's rows, the ids of the graded learners not on ``roster``): one row per
    learner and assignment, sorted by assignment, then student.

    The roster is ``roster``'s students, or else every student of the gradebook and of the
    side table. The assignments are those of the gradebook and of the side table that are
    the course's (:func:`~autograder.grading.record.course_assignments`): a folder that is
    no assignment never becomes a column or a row.
    """
    workspace = Path(workspace).resolve()
    rows, _ = rewrite_records(workspace)
    gb_students, maxima = gradebook_students_and_assignments(workspace)
    known = course_assignments(set(maxima))
    rows = {k: r for k, r in rows.items() if k[1] in known}
    graded = {s for s, _ in rows}
    students = read_roster(roster) if roster else sorted(set(gb_students) | graded)
    assignments = sorted(set(maxima) | {a for _, a in rows})
    strangers = sorted(graded - set(students)) if roster else []
    table = []
    for a in assignments:
        for s in students:
            r = rows.get((s, a))
            if r is None:
                table.append({"student_id": s, "assignment": a, "score": 0.0,
                              "max_score": maxima.get(a, 0.0), "late_penalty": 0.0,
                              "status": MISSING, "detail": "no submission"})
            else:
                table.append({"student_id": s, "assignment": a, "score": r.score,
                              "max_score": r.max_score or maxima.get(a, 0.0),
                              "late_penalty": r.late_penalty, "status": str(r.status),
                              "detail": r.detail})
    return table, strangers


def left_out(strangers: list[str]) -> list[str]:
    """The warning of the plain export about learners not on the roster."""
    return ([f"submissions from students not on the roster, left out: {', '.join(strangers)}"]
            if strangers else [])


def export(workspace: Path, out: Path, roster: Path | None = None) -> tuple[list[dict], list[str]]:
    """Write the export CSV (:func:`class_table`) to ``out``; return (its rows, warnings)."""
    table, strangers = class_table(workspace, roster)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    write_csv(Path(out), EXPORT_FIELDS, spreadsheet_safe(table))
    return table, left_out(strangers)


# Rows whose score is not a grade yet: the grader or the instructor has to act first. A
# platform's file gets no score for them (Canvas: the cell as it was; Moodle: empty, "no
# grade"); they are listed. Every other status is exported with its score, as here.
UNSETTLED = frozenset({"error", "unknown-assignment", "several-notebooks",
                       "invalid-student-id", "needs-manual-grading"})


def number(score: float) -> str:
    """A score as a platform's CSV holds it: ``14``, ``8.5``; never rounded."""
    short = f"{score:g}"
    return short if float(short) == score else repr(float(score))


@dataclass
class Report:
    """What writing a platform's file did (:mod:`~autograder.grading.canvas`,
    :mod:`~autograder.grading.moodle`), for the instructor."""

    filled: int = 0  # scores written
    missing: int = 0  # of them, learners with no submission (0)
    unmatched: list[str] = field(default_factory=list)
    ambiguous: list[str] = field(default_factory=list)
    unsettled: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def print(self, done: str) -> int:
        """Print ``done`` and every listed learner; the exit status: 0 when every grade
        found its one place, 1 when some are unmatched or ambiguous."""
        for title, lines in (("unmatched, not in the file", self.unmatched),
                             ("ambiguous, not filled", self.ambiguous),
                             ("not a grade yet, no score written", self.unsettled),
                             ("warning", self.warnings)):
            for line in lines:
                print(f"{title}: {line}", file=sys.stderr)
        print(done)
        return 1 if self.unmatched or self.ambiguous else 0


class Refused(Exception):
    """A command that cannot run: said on stderr, exit status 2."""


def locked_table(workspace: Path, roster: Path | None = None) -> tuple[list[dict], list[str]]:
    """:func:`class_table` (rows, learners not on the roster) under the workspace's lock;
    :class:`Refused` naming what is
    wrong (no workspace, no roster file, a grading run using it, a bad roster)."""
    workspace = Path(workspace)
    if not workspace.is_dir():
        raise Refused(f"no grading workspace at {workspace}")
    if roster is not None and not Path(roster).is_file():
        raise Refused(f"no roster file at {roster}")
    from filelock import FileLock, Timeout

    lock = FileLock(workspace / ".lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise Refused(f"a grading run is using {workspace}; export when it has finished") from None
    try:
        return class_table(workspace, roster)
    except ValueError as exc:
        raise Refused(str(exc)) from None
    finally:
        lock.release()


def main(workspace: Path, out: Path | None, roster: Path | None) -> int:
    """``python -m autograder export``: write the file and say what it holds."""
    try:
        table, strangers = locked_table(workspace, roster)
    except Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    warnings = left_out(strangers)
    out = Path(out) if out else Path(workspace) / "export.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(out, EXPORT_FIELDS, spreadsheet_safe(table))
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    missing = sum(r["status"] == MISSING for r in table)
    print(f"{len(table)} row(s) ({missing} missing) in {out}")
    return 0
