"""Learner ids, checked once, at the door: which folder names nbgrader's tools can carry.

A student id is the name of a submission folder. nbgrader's tools use it raw: formgrader's
pages build their links by joining it into a URL (``/formgrader/manage_students/`` + id),
where a browser reads ``\\`` as ``/``, and ``#``, ``?`` and ``%`` as URL syntax; its paths
join it into folder names and glob patterns (``*``, ``?``, ``[``); its exchange splits
``student+assignment+time`` on ``+``; its gradebook holds at most 128 characters (a longer
id fails in PostgreSQL). An id is accepted when formgrader's links lead back to it and
none of these break: letters and digits (any script, with the combining marks that
follow a letter: ``अमित``, ``กิตติ``, a decomposed ``José``), ``.``, ``_``, ``-`` and ``@``, not
starting with ``.``, ``-`` or ``@``: a spreadsheet reads a cell starting with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return as a formula, so no graded id needs escaping in a
CSV (an escaped ``'@A1`` is an id no platform matches). Any other folder name is refused
with a reason (status ``invalid-student-id``); it is never renamed, since a renamed id
would have to be mapped back in every tool and in the export. Nor is it normalised: the
id is the folder's name, as it is; two folders that are one id once normalised (NFC) are
both refused as ambiguous (:func:`nfc_clashes`).
"""

from __future__ import annotations

import unicodedata

MAX_LENGTH = 128  # nbgrader's Student.id column is String(128)
ALLOWED_MARKS = "._-@"
# Combining marks (nonspacing Mn, spacing Mc): the vowel signs of Devanagari and Thai
# (``अमित``, ``กิตติ``), the accents of a decomposed (NFD) ``José``. Part of the letter they
# follow, so allowed after a letter or another mark, never first.
COMBINING = ("Mn", "Mc")
FORMULA_STARTS = "=+-@\t\r"  # a spreadsheet reads a cell starting so as a formula
NAMED = {"\\": "a backslash (a Windows domain login DOMAIN\\user?)", "/": "a slash",
         " ": "a space", "+": "a plus sign (nbgrader's exchange separator)",
         "%": "a percent sign", "#": "a hash", "?": "a question mark"}


def _named(ch: str) -> str:
    """How a refused character is named in a message: its name and code point."""
    known = NAMED.get(ch)
    if known:
        return known
    return f"{ch!r} ({unicodedata.name(ch, '') or f'U+{ord(ch):04X}'})"


def id_problem(student_id: str) -> str:
    """"" when ``student_id`` can be a student id for every nbgrader tool; otherwise why
    not (naming the first offending character), as one phrase."""
    if not student_id:
        return "it is empty"
    if len(student_id) > MAX_LENGTH:
        return f"it is {len(student_id)} characters long (nbgrader keeps at most {MAX_LENGTH})"
    if student_id[0] in FORMULA_STARTS:
        return (f"it starts with {student_id[0]!r} (a spreadsheet reads the id as a formula "
                "in every CSV file)")
    if student_id[0] == ".":
        return f"it starts with {student_id[0]!r}"
    for i, ch in enumerate(student_id):
        if ch.isalnum() or ch in ALLOWED_MARKS:
            continue
        if unicodedata.category(ch) in COMBINING and i and (
                student_id[i - 1].isalnum() or unicodedata.category(student_id[i - 1])
                in COMBINING):  # a vowel sign, an accent of NFD's "José": part of a letter
            continue
        if unicodedata.category(ch) in COMBINING:
            return f"it holds {_named(ch)}, a combining mark that follows no letter"
        return f"it holds {_named(ch)}"
    return ""


def nfc_clashes(student_ids: list[str]) -> dict[str, list[str]]:
    """The ids of ``student_ids`` that are one id once normalised (NFC): ``José`` typed on
    one machine and unzipped as NFD ``Jose\u0301`` on a Mac. NFC form -> the ids (folder
    names, as they are), for every form that two or more ids share."""
    forms: dict[str, list[str]] = {}
    for s in student_ids:
        forms.setdefault(unicodedata.normalize("NFC", s), []).append(s)
    return {form: sorted(group) for form, group in forms.items() if len(group) > 1}


def clash(student_id: str, group: list[str]) -> str:
    """The ``detail`` of a folder refused as one of ``group``, ids that differ only in
    their Unicode normalisation."""
    others = ", ".join(ascii(s) for s in group if s != student_id)
    return (f"the folder {ascii(student_id)} is not graded: its name is the same id as "
            f"{others} once normalised (Unicode NFC; one was typed precomposed, the other "
            "unzipped decomposed, as macOS does), so they are one learner or two that the "
            "platforms cannot tell apart. Keep one folder (or rename one) and grade again")


def _shown(text: str) -> str:
    return f"'{text}'" if text.isprintable() else repr(text)


def refusal(student_id: str, folder: str) -> str:
    """The ``detail`` of a refused folder: which folder, why, and what to do."""
    return (f"the folder {_shown(folder)} is not graded: its name {_shown(student_id)} cannot be a "
            f"student id, since {id_problem(student_id)}; formgrader's links and nbgrader's "
            f"paths break on it. Rename the folder to letters, digits, '.', '_', '-' or '@', "
            f"not starting with '.', '-' or '@' (the name your learning platform's export "
            f"matches: its login, say) and grade again")
