"""Grades into Moodle as it imports them: ``python -m autograder export --moodle FIELD``.

Moodle's grade import (Grades > Import > CSV file) reads a CSV with one column that
identifies each user, mapped to one of Moodle's user fields ("Map to": id, idnumber, email
or username), and one column per grade item. This module writes that file: the first
column is headed ``FIELD`` and holds each learner's value of it, from the roster's column
of that name (``--roster``: a CSV with a ``student_id`` or ``id`` column and a ``FIELD``
column), or the student id itself without a roster; then one column per assignment, headed
by its id.

Moodle aborts the whole import at a user it cannot find, and reads an empty cell as "no
grade". So a learner with no value, or one value shared by two ids, or two values for one
id, is listed and left out (never guessed); a score that is not a grade yet
(:data:`~autograder.grading.export.UNSETTLED`) is an empty cell, listed. A learner of the
roster with no submission is ``missing``: 0, as in the plain export. Also listed and left
out: a folder whose name cannot be a student id (:mod:`~autograder.grading.ids`: it was
never graded, it is no learner), and a value that starts as a spreadsheet formula
(``=``, ``+``, ``-``, ``@``, a tab or a carriage return): written raw it would run in the
spreadsheet that opens the file, and altered it would match no Moodle user.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

from autograder.grading.export import MISSING, UNSETTLED, Refused, Report, locked_table, number
from autograder.grading.ids import FORMULA_STARTS, id_problem, nfc_clashes

FIELDS = ("id", "idnumber", "email", "username")  # Moodle's "Map to" user fields


def writable(keys: dict[str, str], field: str, report: Report) -> dict[str, str]:
    """``keys`` (student id -> its ``field`` value) without the learners that cannot be in
    the file, each listed: an id that cannot be a student id (a folder the grader refused,
    or one of two that are one id once normalised),
    a value a spreadsheet would read as a formula."""
    clashes = {s for group in nfc_clashes(list(keys)).values() for s in group}
    out = {}
    for s, v in keys.items():
        problem = id_problem(s)
        if s in clashes:
            report.unmatched.append(f"{ascii(s)}: another folder is the same id once "
                                    "normalised (Unicode NFC), so it is not graded; keep one "
                                    "folder and grade again; left out")
        elif problem:
            report.unmatched.append(f"{s!r}: not a student id ({problem}): the folder is not "
                                    "graded; rename it and grade again; left out")
        elif v.startswith(tuple(FORMULA_STARTS)):
            report.unmatched.append(f"{s!r}: its {field} {v!r} starts with {v[0]!r}, which a "
                                    "spreadsheet reads as a formula; left out (never written "
                                    "as it is, never altered)")
        else:
            out[s] = v
    return out


def user_values(roster: Path, field: str, report: Report) -> dict[str, str]:
    """student id -> its one ``field`` value in ``roster``; ids with none or several, and
    values shared by several ids, are reported and left out."""
    rows = list(csv.DictReader(io.StringIO(Path(roster).read_text(encoding="utf-8-sig"))))
    header = list(rows[0]) if rows else []
    key = "student_id" if "student_id" in header or field == "id" else "id"
    for need in (key, field):
        if need not in header:
            raise Refused(f"roster {roster} has no {need!r} column (it has "
                          f"{', '.join(map(repr, header))})")
    values: dict[str, set[str]] = {}
    for r in rows:
        s, v = (r[key] or "").strip(), (r[field] or "").strip()
        if s:
            values.setdefault(s, set()).update({v} - {""})
    owners: dict[str, set[str]] = {}
    for s, vs in values.items():
        for v in vs:
            owners.setdefault(v, set()).add(s)
    out = {}
    for s, vs in sorted(values.items()):
        shared = sorted(v for v in vs if len(owners[v]) > 1)
        if not vs:
            report.unmatched.append(f"{s!r}: no {field} in the roster {roster}")
        elif len(vs) > 1:
            report.ambiguous.append(f"{s!r} has {len(vs)} {field} values in the roster: "
                                    f"{', '.join(sorted(vs))}; left out")
        elif shared:
            report.ambiguous.append(f"{s!r}: its {field} {shared[0]!r} is also that of "
                                    f"{', '.join(sorted(owners[shared[0]] - {s}))}; left out")
        else:
            out[s] = next(iter(vs))
    return out


def rows(table: list[dict], keys: dict[str, str], report: Report) -> list[list[str]]:
    """One row per keyed learner: the user field's value, then a score per assignment
    (empty for a score that is not a grade yet)."""
    assignments = sorted({r["assignment"] for r in table})
    scores = {(r["student_id"], r["assignment"]): r for r in table}
    out = []
    for s, value in sorted(keys.items(), key=lambda kv: kv[1]):
        line = [value]
        for a in assignments:
            r = scores[(s, a)]
            if r["status"] in UNSETTLED:
                report.unsettled.append(f"{s} {a}: {r['status']}: {r['detail'][:120]}")
                line.append("")
                continue
            line.append(number(r["score"]))
            report.filled += 1
            report.missing += r["status"] == MISSING
        out.append(line)
    return out


def main(workspace: Path, field: str, roster: Path | None, out: Path | None) -> int:
    """``python -m autograder export --moodle FIELD``: write the import file and report;
    exit status 0 when every learner is in it, 1 when some are listed as unmatched or
    ambiguous, 2 when nothing could be written."""
    out = Path(out) if out else Path(workspace) / "moodle-import.csv"
    report = Report()
    try:
        if field not in FIELDS:
            raise Refused(f"--moodle {field!r}: Moodle's grade import identifies users by "
                          f"{', '.join(FIELDS[:-1])} or {FIELDS[-1]}")
        if roster is not None and out.resolve() == Path(roster).resolve():
            raise Refused(f"--out {out} is the roster itself: it is never changed")
        table, strangers = locked_table(workspace, roster)
        report.unmatched += [f"{s!r}: graded, not on the roster {roster}" for s in strangers]
        students = sorted({r["student_id"] for r in table})
        keys = user_values(roster, field, report) if roster else {s: s for s in students}
    except Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    assignments = sorted({r["assignment"] for r in table})
    keys = writable({s: v for s, v in keys.items() if s in students}, field, report)
    lines = rows(table, keys, report)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([[field, *assignments], *lines])
    return report.print(f"{len(lines)} learner(s), {report.filled} score(s) "
                        f"({report.missing} missing: 0) in {out}")
