"""Manual grading without a browser: ``python -m autograder manual list|score``.

Lists the written answers (nbgrader "manually graded answer" cells) of a class as the
autograded notebooks hold them, and records a score and a comment through nbgrader's API
(``Grade.manual_score``, ``Comment.manual_comment``: what formgrader writes), then
regenerates that learner's feedback and derives ``grades.csv`` again
(:func:`autograder.grading.record.rewrite_records`), so the gradebook, ``grades.csv``, the feedback
and the export agree.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.grading.gradebook import db_url, open_gradebook, shown
from autograder.grading.gradebook import exists as gradebook_exists
from autograder.grading.release import nbgrader
from autograder.notebook import nbgrader_meta
from autograder.check_report import printable

# What each manual score was given for: "student/assignment/cell" -> SHA-256 of the answer
# as it was scored. nbgrader's autograde marks every scored written answer "needs manual
# grade" again when it regrades a submission (for a moved due date, a fixed hidden test,
# --force...); :func:`reconcile` clears that mark where the answer has not changed.
SCORED_JSON = ".autograder/manual_scored.json"


@dataclass
class Answer:
    """One written answer of one learner."""

    student_id: str
    assignment: str
    notebook: str
    cell: str  # the grade_id
    max_score: float
    score: float | None  # the manual score, None while ungraded
    comment: str
    text: str  # the learner's answer as graded (from autograded/)
    auto_score: float | None = None  # nbgrader's 0 for an answer left as released (blank)
    needs_grade: bool = True  # the gradebook's needs_manual_grade
    changed: bool = True  # a scored answer's text differs from the one scored (or is unknown)

    @property
    def label(self) -> str:
        """The points as ``manual list`` shows them."""
        if self.score is None:
            if not self.needs_grade and self.auto_score is not None:
                return f"{self.auto_score:g} / {self.max_score:g} (blank: scored by nbgrader)"
            return f"ungraded / {self.max_score:g}"
        if self.needs_grade:
            why = ("the answer changed after it was scored" if self.changed else
                   "graded again since it was scored; score it again to keep it")
            return f"{self.score:g} / {self.max_score:g} (to review: {why})"
        return f"{self.score:g} / {self.max_score:g}"


def _answer_source(workspace: Path, student: str, assignment: str, notebook: str,
                   cell: str) -> str | None:
    path = workspace / "autograded" / student / assignment / f"{notebook}.ipynb"
    if not path.is_file():
        return None
    for c in nbformat.read(path, as_version=4).cells:
        if nbgrader_meta(c).get("grade_id") == cell:
            return c.source
    return None


def _answer_text(workspace: Path, student: str, assignment: str, notebook: str,
                 cell: str) -> str:
    path = workspace / "autograded" / student / assignment / f"{notebook}.ipynb"
    if not path.is_file():
        return "(autograded notebook not found)"
    text = _answer_source(workspace, student, assignment, notebook, cell)
    return "(cell not found)" if text is None else text


def _answer_digest(workspace: Path, student: str, assignment: str, notebook: str,
                   cell: str) -> str:
    text = _answer_source(workspace, student, assignment, notebook, cell)
    return "" if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def _scored(workspace: Path) -> dict[str, str]:
    path = workspace / SCORED_JSON
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _remember(workspace: Path, key: str, digest: str) -> None:
    """Record (atomically) which answer a manual score was given for."""
    path = workspace / SCORED_JSON
    path.parent.mkdir(parents=True, exist_ok=True)
    table = _scored(workspace)
    table[key] = digest
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(table, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def reconcile(workspace: Path, gb) -> int:
    """Clear nbgrader's "needs manual grade" mark on written answers that keep a manual score
    (given with ``manual score``) and whose text is the one that was scored: a regrade for
    another reason (a due date, a hidden test, ``--force``) leaves their score standing. An
    answer that changed (a resubmission), or was scored in formgrader, keeps the mark.
    ``gb`` is an open ``nbgrader.api.Gradebook``; returns the number of marks cleared."""
    from nbgrader.api import Grade

    table = _scored(workspace)
    if not table:
        return 0
    cleared = 0
    marked = gb.db.query(Grade).filter(Grade.needs_manual_grade.is_(True),
                                       Grade.manual_score.isnot(None)).all()
    for g in marked:
        nb = g.notebook
        student, assignment = nb.assignment.student.id, nb.assignment.assignment.name
        digest = table.get(f"{student}/{assignment}/{g.name}")
        if digest and digest == _answer_digest(workspace, student, assignment, nb.name,
                                               g.name):
            g.needs_manual_grade = False
            cleared += 1
    if cleared:
        gb.db.commit()
    return cleared


def answers(workspace: Path, assignment: str | None = None) -> list[Answer]:
    """Every written answer of the gradebook's submissions (of ``assignment`` if given),
    by assignment, student and cell."""
    workspace = Path(workspace).resolve()
    out = []
    scored = _scored(workspace)
    with open_gradebook(workspace) as gb:
        for a in gb.assignments:
            if assignment and a.name != assignment:
                continue
            for sub in a.submissions:
                for nb in sub.notebooks:
                    for g in nb.grades:
                        if g.cell.cell_type != "markdown" and g.auto_score is not None:
                            continue  # autograded test
                        comment = next((c.manual_comment or "" for c in nb.comments
                                        if c.name == g.name), "")
                        out.append(Answer(sub.student.id, a.name, nb.name, g.name,
                                          float(g.max_score), g.manual_score, comment,
                                          _answer_text(workspace, sub.student.id, a.name,
                                                       nb.name, g.name),
                                          g.auto_score, bool(g.needs_manual_grade),
                                          f"{sub.student.id}/{a.name}/{g.name}" in scored))
    return sorted(out, key=lambda x: (x.assignment, x.student_id, x.cell))


def record_score(workspace: Path, student: str, assignment: str, cell: str, points: float,
                 comment: str | None = None) -> Answer:
    """Set the manual score (and comment) of one written answer in the gradebook.

    Raises:
        ValueError: no such submission or written-answer cell, or ``points`` outside
            [0, the cell's maximum].
    """
    from nbgrader.api import MissingEntry

    workspace = Path(workspace).resolve()
    with open_gradebook(workspace) as gb:
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            raise ValueError(f"no graded submission of {assignment} by {student!r} in "
                             f"{shown(db_url(workspace))}") from None
        written = {g.name: (nb, g) for nb in sub.notebooks for g in nb.grades
                   if g.cell.cell_type == "markdown" or g.auto_score is None}
        if cell not in written:
            raise ValueError(f"{assignment} has no written answer {cell!r}; its written "
                             f"answers: {', '.join(sorted(written)) or 'none'}")
        nb, grade = written[cell]
        if not 0 <= points <= grade.max_score:
            raise ValueError(f"points {points:g} outside 0..{grade.max_score:g} for {cell}")
        grade.manual_score = float(points)
        grade.needs_manual_grade = False  # as formgrader's "save" does
        if comment is not None:
            try:
                c = gb.find_comment(cell, nb.name, assignment, student)
                c.manual_comment = comment
            except MissingEntry:
                raise ValueError(f"{cell} has no comment field in the gradebook") from None
        gb.db.commit()
        _remember(workspace, f"{student}/{assignment}/{cell}",
                  _answer_digest(workspace, student, assignment, nb.name, cell))
        return Answer(student, assignment, nb.name, cell, float(grade.max_score),
                      grade.manual_score, comment or "", "", grade.auto_score, False)


def regenerate_feedback(workspace: Path, student: str, assignment: str) -> str:
    """``nbgrader generate_feedback ASSIGNMENT --student STUDENT --force`` in the workspace;
    "" on success, else nbgrader's output."""
    done = nbgrader(["generate_feedback", assignment, "--student", student, "--force"],
                    cwd=workspace)
    return "" if done.returncode == 0 else done.stdout


def _lock(workspace: Path):
    from filelock import FileLock, Timeout

    lock = FileLock(Path(workspace) / ".lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None
    return lock


def main_list(workspace: Path, assignment: str | None) -> int:
    """``manual list``: print each written answer: who, which cell, points, the text."""
    workspace = Path(workspace)
    if not gradebook_exists(workspace):
        print(f"error: no gradebook in {workspace} (run python -m autograder grade first)",
              file=sys.stderr)
        return 2
    found = answers(workspace, assignment)
    for a in found:
        print(printable(f"== {a.student_id}  {a.assignment}  {a.cell}  {a.label}"
                        + (f"  comment: {a.comment}" if a.comment else "")))
        print(printable(a.text.rstrip()) or "(blank)")  # the learner's text, inert
        print()
    ungraded = sum(a.score is None and a.needs_grade for a in found)
    review = sum(a.score is not None and a.needs_grade for a in found)
    print(f"{len(found)} written answer(s), {ungraded} ungraded"
          + (f", {review} to review" if review else "") + ". Score one with: "
          "python -m autograder manual score STUDENT ASSIGNMENT CELL POINTS "
          f"--workspace {workspace} [--comment TEXT]")
    return 0


def main_score(workspace: Path, student: str, assignment: str, cell: str, points: float,
               comment: str | None, *, rewrite_records) -> int:
    """``manual score``: record, regenerate the learner's feedback, derive grades.csv.

    ``rewrite_records``: :func:`autograder.grading.record.rewrite_records`, which rewrites the workspace's
    CSV files and reports from the gradebook (the record reads the manual scores this
    module keeps, so this module does not import it)."""
    workspace = Path(workspace).resolve()
    if not gradebook_exists(workspace):
        print(f"error: no gradebook in {workspace}", file=sys.stderr)
        return 2
    lock = _lock(workspace)
    if lock is None:
        print(f"error: a grading run is using {workspace}; score when it has finished",
              file=sys.stderr)
        return 2
    try:
        try:
            record_score(workspace, student, assignment, cell, points, comment)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        failed = regenerate_feedback(workspace, student, assignment)
        rows, _ = rewrite_records(workspace)
    finally:
        lock.release()
    row = rows.get((student, assignment))
    if row is not None:
        print(f"{student} {assignment}: {cell} = {points:g}; total {row.score:g} / "
              f"{row.max_score:g} ({row.status}) in {workspace / 'grades.csv'}")
    if failed:
        print(f"warning: nbgrader generate_feedback failed:\n{failed[-2000:]}", file=sys.stderr)
        return 1
    return 0
