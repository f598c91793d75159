"""Grades into Canvas as it imports them: ``python -m autograder export --canvas FILE``.

Canvas imports grades only as its own gradebook export with columns filled in: a header
``Student,ID,SIS User ID,SIS Login ID,Section,<assignment name (id)>,...``, a
``Points Possible`` row, then one row per learner. This module fills the cells of the
columns named after the course's assignments (``ex01_python_attention (1234)``, or a name
the instructor gives) in the rows of the learners it matches, by SIS login or SIS user id
equal to the student id, and leaves every other byte of the file as it was: the file is
split into its raw fields (checked against Python's ``csv`` reading of it) and only the
filled fields are written anew.

A student id that matches no row, or several, and a row that matches several ids are
listed and filled with nothing: never guessed. A learner of the file with no submission is
``missing``: 0, as in the plain export. A score that is not a grade yet
(:data:`~autograder.grading.export.UNSETTLED`) leaves its cell as it was, listed.
"""

from __future__ import annotations

import csv
import io
import re
import sys
from pathlib import Path

from autograder.grading.export import MISSING, UNSETTLED, Refused, Report, locked_table, number

KEYS = ("SIS Login ID", "SIS User ID")  # matched against the student id, in this order
FIELD = re.compile(r'"(?:[^"]|"")*"|[^,"\r\n]*')
END = re.compile(r"\r\n|\n|\r|$")
ASSIGNMENT = re.compile(r"^(?P<name>.*) \((?P<id>\d+)\)$")


def split(text: str) -> list[tuple[list[str], str]]:
    """The records of a CSV text as (raw fields, line end): joined again with ``,`` and
    the line end they give back ``text`` exactly. ValueError naming the line when a field
    is not CSV (a quote inside an unquoted field), or when Python's ``csv`` reads other
    values than these fields hold."""
    records, pos, line = [], 0, 1
    while pos < len(text):
        fields = []
        while True:
            m = FIELD.match(text, pos)
            fields.append(m.group())
            pos = m.end()
            if text.startswith(",", pos):
                pos += 1
                continue
            end = END.match(text, pos)
            if end is None or (not end.group() and pos < len(text)):
                raise ValueError(f"line {line} is not CSV: a quote inside an unquoted field")
            records.append((fields, end.group()))
            line += 1 + sum(f.count("\n") for f in fields)
            pos = end.end()
            break
    read = list(csv.reader(io.StringIO(text, newline="")))
    if read != [[unquote(f) for f in fields] if fields != [""] else [] for fields, _ in records]:
        raise ValueError("Python's csv module reads other values than the fields hold")
    return records


def unquote(raw: str) -> str:
    """A raw CSV field's value."""
    return raw[1:-1].replace('""', '"') if raw.startswith('"') else raw


def quote(value: str) -> str:
    """``value`` as a raw CSV field (quoted only when it must be, as Canvas writes)."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow([value])
    return buf.getvalue()


def columns(header: list[str], assignments: list[str], names: dict[str, str],
            report: Report) -> dict[str, int]:
    """assignment -> the index of its one column (``names`` maps an assignment to the
    Canvas name, else the name is the id); an assignment with no column or several is
    reported and left out."""
    by_name: dict[str, list[int]] = {}
    for i, h in enumerate(header):
        m = ASSIGNMENT.match(h.strip())
        if m:
            by_name.setdefault(m["name"], []).append(i)
    out = {}
    for a in assignments:
        name = names.get(a, a)
        found = by_name.get(name, [])
        if len(found) == 1:
            out[a] = found[0]
        elif found:
            report.ambiguous.append(f"assignment {a}: {len(found)} columns are named {name!r} ("
                                    + ", ".join(header[i] for i in found) + "); none filled")
        else:
            report.warnings.append(f"assignment {a}: no column named {name!r} "
                                   f"(give --column {a}=NAME for another name); not filled")
    unused = [a for a in names if a not in assignments]
    if unused:
        raise ValueError(f"--column names assignments the workspace does not have: "
                         f"{', '.join(unused)}")
    return out


def _who(row: list[str], at: dict[str, int]) -> str:
    keys = ", ".join(f"{k} {row[at[k]]!r}" for k in KEYS if k in at and row[at[k]].strip())
    return f"{row[at['Student']]!r} (ID {row[at['ID']]}{', ' + keys if keys else ''})"


def match(rows: dict[int, list[str]], at: dict[str, int], students: set[str],
          report: Report) -> dict[int, str | None]:
    """Canvas row index -> its one student id (None: no submission, ``missing``); a row
    or an id matched more than once is reported and left out, an id matched by no row is
    reported. A row with neither SIS id (Canvas's ``Student, Test``, a learner without
    one) matches no student id: reported and left as it was, never given a 0."""
    rows = dict(rows)
    for i in [i for i, r in rows.items() if not any(r[at[k]].strip() for k in KEYS if k in at)]:
        report.warnings.append(f"row {_who(rows.pop(i), at)} has no SIS User ID or SIS Login "
                               "ID: left as it was")
    ids_of = {i: {r[at[k]].strip() for k in KEYS if k in at} & students
              for i, r in rows.items()}
    rows_of: dict[str, list[int]] = {}
    for i, found in ids_of.items():
        for s in found:
            rows_of.setdefault(s, []).append(i)
    out = {}
    for i, found in ids_of.items():
        if len(found) > 1:
            report.ambiguous.append(f"row {_who(rows[i], at)} matches the student ids "
                                    f"{', '.join(sorted(found))}; not filled")
        elif found and len(rows_of[next(iter(found))]) > 1:
            continue  # reported once, below, for the id
        else:
            out[i] = next(iter(found), None)
    for s, where in sorted(rows_of.items()):
        if len(where) > 1:
            report.ambiguous.append(f"student id {s!r} matches {len(where)} rows: "
                                    + "; ".join(_who(rows[i], at) for i in where)
                                    + "; not filled")
    folded = {r[at[k]].strip().casefold(): i for i, r in rows.items()
              for k in KEYS if k in at and r[at[k]].strip()}
    for s in sorted(students - set(rows_of)):
        near = folded.get(s.casefold())
        if near is not None and out.get(near, "") is None:
            del out[near]  # not "missing": probably this learner's row, left as it was
        report.unmatched.append(f"{s!r}: no row with that SIS login or SIS user id" + (
            f" (the row {_who(rows[near], at)} differs only in case: left as it was)"
            if near is not None else ""))
    return out


def is_learner(values: list[str], at: dict[str, int]) -> bool:
    """A learner's row: it has a Canvas ID (the ``Points Possible`` row and Canvas's other
    rows above the learners have none)."""
    return (len(values) > at["ID"] and bool(values[at["ID"]].strip())
            and values[at["Student"]].strip() != "Points Possible")


def header_columns(header: list[str]) -> dict[str, int]:
    """Where Canvas's identifying columns are; ValueError when it is not Canvas's header."""
    at = {name: header.index(name) for name in ("Student", "ID", *KEYS) if name in header}
    lacking = [n for n in ("Student", "ID") if n not in at]
    if lacking or not any(k in at for k in KEYS):
        raise ValueError("it is not a Canvas gradebook export: its header has no "
                         + " or ".join(repr(n) for n in (lacking or KEYS)) + " column (it has "
                         + ", ".join(repr(h) for h in header[:8]) + ")")
    return at


def check_points(records, at, cols, maxima, report: Report) -> None:
    """Warn where Canvas's points possible differ from the assignment's maximum here."""
    for fields, _ in records[1:]:
        values = [unquote(f) for f in fields]
        if values and values[at["Student"]].strip() == "Points Possible":
            for a, c in cols.items():
                try:
                    canvas = float(values[c])
                except (ValueError, IndexError):
                    continue
                if canvas != maxima.get(a, canvas):
                    report.warnings.append(
                        f"assignment {a}: Canvas has {number(canvas)} points possible, the "
                        f"grader's maximum is {number(maxima[a])}: Canvas shows the score "
                        f"out of {number(canvas)}")


def filled_export(text: str, table: list[dict], names: dict[str, str]) -> tuple[str, Report]:
    """(``text``, a Canvas gradebook export, with the assignments' cells of the matched
    learners filled from ``table``, the export's rows; what was done)."""
    report = Report()
    records = split(text)
    if not records:
        raise ValueError("it is empty")
    header = [unquote(f) for f in records[0][0]]
    header[0] = header[0].removeprefix("\ufeff")  # Canvas's byte order mark
    at = header_columns(header)
    for n, (fields, _) in enumerate(records[1:], 2):
        if fields != [""] and len(fields) != len(header):
            raise ValueError(f"record {n} has {len(fields)} fields, the header {len(header)}")
    scores = {(r["student_id"], r["assignment"]): r for r in table}
    cols = columns(header, sorted({r["assignment"] for r in table}), names, report)
    maxima: dict[str, float] = {}
    for r in table:
        maxima[r["assignment"]] = max(maxima.get(r["assignment"], 0.0), r["max_score"])
    check_points(records, at, cols, maxima, report)
    learners = {i: [unquote(f) for f in fields] for i, (fields, _) in enumerate(records)
                if i and is_learner([unquote(f) for f in fields], at)}
    for i, student in match(learners, at, {r["student_id"] for r in table}, report).items():
        for a, c in cols.items():
            r = scores.get((student, a)) if student else None
            if r is not None and r["status"] in UNSETTLED:
                report.unsettled.append(f"{student} {a}: {r['status']}: {r['detail'][:120]}")
                continue
            records[i][0][c] = quote(number(r["score"] if r else 0.0))
            report.filled += 1
            report.missing += r is None or r["status"] == MISSING
    return "".join(",".join(fields) + end for fields, end in records), report


def main(workspace: Path, gradebook: Path, out: Path | None, names: dict[str, str]) -> int:
    """``python -m autograder export --canvas FILE``: write the filled copy and report;
    exit status 0 when every learner's grade found its row, 1 when some are listed as
    unmatched or ambiguous, 2 when nothing could be written."""
    gradebook = Path(gradebook)
    out = Path(out) if out else Path(workspace) / "canvas-import.csv"
    try:
        if not gradebook.is_file():
            raise Refused(f"no Canvas gradebook export at {gradebook}")
        if out.resolve() == gradebook.resolve():
            raise Refused(f"--out {out} is the Canvas file itself: it is never changed; "
                          "name a new file")
        try:
            text = gradebook.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Refused(f"{gradebook} is not UTF-8 text (byte {exc.start}), as Canvas "
                          "exports it") from None
        table, _ = locked_table(workspace)  # every learner: the Canvas file is the roster
        try:
            filled, report = filled_export(text, table, names)
        except ValueError as exc:
            raise Refused(f"{gradebook}: {exc}") from None
    except Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(filled.encode("utf-8"))
    return report.print(f"{report.filled} cell(s) filled ({report.missing} missing: 0) in {out}")
