"""The report ``check`` prints (:func:`report`): the learner's cells that failed, one row per
graded cell (:class:`~autograder.verdicts.TestResult`) with its points and label, the points
and the counts; every learner's text in it made safe for a terminal (:func:`printable`).
Stdlib only: the learner's kernel (``%check``) and the website's in-page checker print it
too."""

from __future__ import annotations

import re

from autograder.verdicts import TestResult

LABELS = {"pass": "PASS", "fail": "FAIL", "timeout": "TIMEOUT", "notrun": "NOT RUN",
          "partial": "PENDING", "hidden": "PENDING", "manual": "MANUAL", "blank": "BLANK"}


# Characters a terminal acts on (C0 and C1 controls but tab and newline, DEL) or that
# reorder the text on screen (bidirectional overrides and isolates).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` (a learner's: an answer, an error message) safe to print in a terminal: each
    control or bidirectional-override character shown as its escape, such as ``\\x1b``,
    so no learner's text clears the screen, forges lines or sets the clipboard."""
    return _CONTROL.sub(lambda m: ascii(m.group(0))[1:-1], text)


def report(rows: list[TestResult], errors: list[tuple[int, str, str]], *,
           whole: bool) -> tuple[list[str], bool]:
    """The lines ``check`` prints after its header: the learner's cells that failed, one
    row per graded cell, the points and the counts; and whether anything is wrong (a test
    failed or did not run, a cell has an error, a written answer is empty).

    ``rows``: :func:`results`; ``errors``: :func:`cell_errors`; ``whole``: the hidden tests
    ran too, so only written answers are still pending.
    """
    lines = [f"error in your cell {name}: {printable(message)}" for _, name, message in errors]
    width = max((len(r.name) for r in rows), default=0)
    lines += [f"{printable(r.name):<{width}}  {r.points:>4g} pt  {LABELS[r.status]:<7}  "
              f"{printable(r.message)}" for r in rows]
    earned = sum(r.points for r in rows if r.earned)
    pending = sum(r.points for r in rows if r.pending)
    lost = sum(r.points for r in rows if r.lost)
    waiting = "written answers" if whole else "hidden tests and written answers"
    why = f" ({waiting}, scored when your instructor grades)" if pending else ""
    lines.append(f"points: {earned:g} earned, {pending:g} pending{why}, {lost:g} lost; "
                 f"{sum(r.points for r in rows):g} in all")
    counts = {s: sum(r.status in group for r in rows) for s, group in (
        ("passed", ("pass",)), ("failed", ("fail", "timeout")), ("not run", ("notrun",)),
        ("pending", ("partial", "hidden", "manual", "blank")))}
    blank = [r.name for r in rows if r.status == "blank"]
    if blank:
        lines.append(f"warning: written answer {', '.join(blank)} is still empty")
    lines.append(f"{counts['passed']} passed, {counts['failed']} failed, "
                 f"{counts['pending']} pending"
                 + (f", {counts['not run']} not run" if counts["not run"] else ""))
    return lines, bool(counts["failed"] or counts["not run"] or errors or blank)
