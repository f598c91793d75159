"""The result table: one typed :class:`Row` per submission, the :class:`Status` values and
the CSV files (``grades.csv``, ``tests.csv``) written atomically after every submission."""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass, field, fields
from enum import StrEnum
from pathlib import Path

GRADES_CSV = "grades.csv"
TESTS_CSV = "tests.csv"
# kind: "autograded", or "manual" for a written answer an instructor scores.
TEST_FIELDS = ["student_id", "assignment", "test", "score", "max_score", "needs_manual_grade",
               "kind"]


class Status(StrEnum):
    """The ``status`` column of ``grades.csv``: what happened to a submission.

    The values are the strings written to the CSV; the grading contract page of the book
    (``contract.md``) says what each means to an instructor.
    """

    GRADED = "graded"
    NEEDS_MANUAL_GRADING = "needs-manual-grading"
    LATE = "late"
    RESTORED_TESTS = "restored-tests"
    TAMPERING = "tampering"
    TIMEOUT = "timeout"
    KERNEL_DIED = "kernel-died"
    OUT_OF_MEMORY = "out-of-memory"
    INVALID_NOTEBOOK = "invalid-notebook"
    WRONG_ASSIGNMENT = "wrong-assignment"
    MISSING_NOTEBOOK = "missing-notebook"
    SEVERAL_NOTEBOOKS = "several-notebooks"
    INVALID_STUDENT_ID = "invalid-student-id"
    UNKNOWN_ASSIGNMENT = "unknown-assignment"
    ERROR = "error"


# Statuses decided at the door (:func:`autograder.grading.submission.discover`), again on
# every run: the folder's name or its notebooks, never a worker's grading.
AT_THE_DOOR = frozenset({Status.SEVERAL_NOTEBOOKS, Status.INVALID_STUDENT_ID})
# Statuses whose rows are final for an unchanged file; anything else is retried.
FINAL = frozenset(Status) - {Status.ERROR, Status.UNKNOWN_ASSIGNMENT} - AT_THE_DOOR
# Most notable first: when several things happened to one graded submission, the status
# column names the most serious one and the detail lists the others.
PRIORITY = [Status.OUT_OF_MEMORY, Status.KERNEL_DIED, Status.TIMEOUT, Status.TAMPERING,
            Status.RESTORED_TESTS, Status.LATE, Status.NEEDS_MANUAL_GRADING, Status.GRADED]


@dataclass
class Row:
    """One row of ``grades.csv``; ``tests`` holds the submission's rows of ``tests.csv``."""

    student_id: str
    assignment: str
    score: float = 0.0
    max_score: float = 0.0
    status: Status = Status.ERROR
    detail: str = ""
    submission_sha256: str = ""
    feedback: str = ""  # the feedback HTML, relative to the workspace
    sandbox: str = ""  # "bubblewrap", or "none" when graded with --no-sandbox
    late_penalty: float = 0.0  # nbgrader's late penalty, already taken off ``score``
    # Only in the workspace's side table (STATE_CSV), not in grades.csv:
    inputs_sha256: str = ""  # the regrade key: digest of the grade's inputs (grading.keys)
    inputs: str = ""  # those inputs as JSON, to say which one changed
    events: str = ""  # JSON {status: detail} found while grading, besides late and manual
    scored: bool = False  # its scores are in the gradebook (nbgrader autograde ran)
    tests: list[dict] = field(default_factory=list, repr=False)

    @classmethod
    def from_dict(cls, data: dict) -> Row:
        """A row from ``grades.csv`` (strings) or from a grading worker's JSON line."""
        known = {f.name for f in fields(cls)}
        row = cls(**{k: v for k, v in data.items() if k in known})
        row.score, row.max_score = float(row.score or 0), float(row.max_score or 0)
        row.late_penalty = float(row.late_penalty or 0)
        row.scored = row.scored in (True, "True", "true", "1")
        row.status = Status(row.status)
        return row

    def to_dict(self) -> dict:
        """Every field; ``tests`` a new list of the same dicts (``dataclasses.asdict`` copied
        each test deeply: 0.75 ms a row, 1.5 s for the side table of a class of 2,000)."""
        out = {name: getattr(self, name) for name in _NAMES}
        out["tests"] = list(self.tests)
        return out

    @property
    def key(self) -> tuple[str, str]:
        return self.student_id, self.assignment


_NAMES = [f.name for f in fields(Row)]
# The side table keeps every field; grades.csv the ones an instructor reads.
STATE_CSV = ".autograder/rows.csv"
STATE_FIELDS = [f.name for f in fields(Row) if f.name != "tests"]
FIELDS = [f for f in STATE_FIELDS if f not in ("inputs_sha256", "inputs", "events", "scored")]


def load_state(workspace: Path) -> dict[tuple[str, str], Row]:
    """The side table of earlier runs (``STATE_CSV``): rows by (student_id, assignment),
    with their regrade keys and grading events; scores are the gradebook's."""
    rows = {}
    if (workspace / STATE_CSV).is_file():
        with (workspace / STATE_CSV).open(newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                row = Row.from_dict(r)
                rows[row.key] = row
    return rows


def save_state(workspace: Path, rows: dict) -> None:
    """Write the side table atomically (after every graded submission: a killed grader
    loses nothing it recorded)."""
    write_state(workspace, {key: state_line(row) for key, row in rows.items()})


def state_line(row: Row) -> str:
    """``row``'s record in the side table, as :func:`save_state` writes it."""
    out = io.StringIO()
    csv.DictWriter(out, STATE_FIELDS, extrasaction="ignore").writerow(row.to_dict())
    return out.getvalue()


def write_state(workspace: Path, lines: dict[tuple[str, str], str]) -> None:
    """Write the side table atomically from each row's :func:`state_line`, by (student id,
    assignment): a grading run keeps them and formats only the row it records (formatting
    every row after every submission made a class's bookkeeping grow with its square)."""
    (workspace / STATE_CSV).parent.mkdir(parents=True, exist_ok=True)
    ordered = sorted(lines, key=lambda key: (key[1], key[0]))  # assignment, then student
    _replace(workspace / STATE_CSV,
             lambda f: f.writelines([_STATE_HEADER] + [lines[key] for key in ordered]))


def save_rows(workspace: Path, rows: dict) -> None:
    """Write ``grades.csv`` and ``tests.csv`` (each row's ``tests``), sorted by assignment
    then student, safe to open in a spreadsheet (:func:`spreadsheet_safe`)."""
    ordered = sorted(rows.values(), key=lambda r: (r.assignment, r.student_id))
    # One row's copy at a time (a class of 2,000 has some 24,000 rows of tests.csv).
    write_csv(workspace / GRADES_CSV, FIELDS, (_safe_row(r.to_dict()) for r in ordered))
    write_csv(workspace / TESTS_CSV, TEST_FIELDS,
              (_safe_row(t) for r in ordered for t in r.tests))


def spreadsheet_safe(rows: list[dict]) -> list[dict]:
    """``rows`` with every text that a spreadsheet would run as a formula (one starting
    with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return, such as a student id
    ``=HYPERLINK(...)`` taken from a folder's name) prefixed with an apostrophe, which
    spreadsheets show as text (OWASP's advice on CSV injection). Numbers stay numbers."""
    return [_safe_row(row) for row in rows]


def _safe_row(row: dict) -> dict:
    return {k: _safe(v) for k, v in row.items()}


def _safe(value):
    if not isinstance(value, str) or not value.startswith(("=", "+", "-", "@", "\t", "\r")):
        return value
    try:
        float(value)
        return value
    except ValueError:
        return "'" + value


def write_csv(path: Path, fieldnames: list[str], rows) -> None:
    """Replace ``path`` atomically with ``rows`` (dicts, any iterable): a killed grader
    leaves the old file or the new one."""
    def write(f) -> None:
        w = csv.DictWriter(f, fieldnames=fieldnames, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    _replace(path, write)


def _replace(path: Path, write) -> None:
    """Replace ``path`` atomically with what ``write(file)`` writes (synced, then renamed)."""
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="", encoding="utf-8") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


_STATE_HEADER = ",".join(STATE_FIELDS) + "\r\n"  # csv's header: plain names, its line end
