"""The submission model: finding submissions in nbgrader's folder layout (refusing at the
door what cannot be one), choosing a folder's notebook, and reading a submitted file
without following a link (:mod:`~autograder.grading.prevalidate` checks one before nbgrader
sees it)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.exercises import exercise_ids
from autograder.grading.ids import clash, id_problem, nfc_clashes, refusal
from autograder.grading.integrity import grade_ids, released_cells
from autograder.grading.results import Status
from autograder.notebook import identify_assignment


@dataclass
class Submission:
    """One learner's submission of one assignment; ``path`` is only ever read."""

    student_id: str
    assignment: str
    path: Path | None  # the submitted notebook, None when the folder has none
    sha256: str = ""
    converted: bool = False  # an nbformat 3 notebook, upgraded before grading
    # Decided at the door (discover): the folder's other notebooks, a note for the row
    # (which one is graded and why), or (status, detail) when none is graded.
    others: tuple[Path, ...] = ()
    note: str = ""
    refused: tuple[Status, str] | None = None

    def cell_count(self) -> int:
        """Number of cells (0 when unreadable: the worker reports why)."""
        try:
            return len(json.loads(read_submitted(self.path)).get("cells", [])) if self.path else 0
        except Exception:  # noqa: BLE001 - unreadable files are reported by the worker
            return 0


# The largest submitted file read (a notebook with its outputs, a timestamp.txt).
MAX_SUBMITTED_BYTES = 64 * 2**20


# What a submitted notebook may hold to be graded, checked before nbformat or nbgrader read
# it (each costs the grader time outside every time limit). The released notebooks have at
# most 38 cells, 23,000 characters of source and JSON nested 6 deep.
MAX_CELLS = 1000
MAX_SOURCE_CHARS = 2_000_000
MAX_DEPTH = 64


class NotAFile(OSError):
    """A submitted path that is not a plain file of its own (a link, a FIFO, a device, a
    folder) or is larger than :data:`MAX_SUBMITTED_BYTES`."""


def read_submitted(path: Path, limit: int = MAX_SUBMITTED_BYTES) -> bytes:
    """The bytes of a submitted file, opened without following a link and without
    blocking (a FIFO never hangs the run). Raises :class:`NotAFile` saying why it is not
    read, FileNotFoundError when it is absent."""
    import os
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: the last part of the path is a link
            raise NotAFile(f"{path.name} is a link, not a file of its own") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotAFile(f"{path.name} is not a plain file")
        if info.st_size > limit:
            raise NotAFile(f"{path.name} is larger than {limit // 2**20} MiB")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise NotAFile(f"{path.name} is larger than {limit // 2**20} MiB")
        return data
    finally:
        os.close(fd)


def sha256(path: Path) -> str:
    """Hex SHA-256 of a submitted file's bytes ("" when it cannot be read as one)."""
    try:
        return hashlib.sha256(read_submitted(path)).hexdigest()
    except OSError:
        return ""


def discover(submissions: Path, assignments: frozenset[str] | None = None) -> list[Submission]:
    """Submissions laid out as nbgrader's ``<student_id>/<assignment_id>/<assignment_id>.ipynb``.

    Checked here, once: only the folders of the course's assignments (``assignments``,
    default :func:`autograder.exercises.exercise_ids`) are submissions, the others are
    named by :func:`strays` and never read; a student folder whose name nbgrader's tools
    cannot carry (:func:`autograder.grading.ids.id_problem`), or that is another folder's
    id once normalised (:func:`autograder.grading.ids.nfc_clashes`), is refused
    (``invalid-student-id``), and the notebook to grade is chosen by
    :func:`choose_notebook`.
    """
    known = _known(assignments)
    students = sorted(p for p in submissions.iterdir() if p.is_dir())
    clashes = {s: group for group in nfc_clashes([p.name for p in students]).values()
               for s in group}
    found = []
    for student in students:
        for folder in sorted(p for p in student.iterdir() if p.is_dir()):
            if folder.name not in known:  # not an assignment: strays() names it
                continue
            if id_problem(student.name):  # nothing in it is read
                found.append(Submission(student.name, folder.name, None, refused=(
                    Status.INVALID_STUDENT_ID, refusal(student.name, str(student)))))
                continue
            if student.name in clashes:
                found.append(Submission(student.name, folder.name, None, refused=(
                    Status.INVALID_STUDENT_ID, clash(student.name, clashes[student.name]))))
                continue
            nb, note, refused = choose_notebook(folder, folder.name)
            sub = Submission(student.name, folder.name, nb, note=note, refused=refused,
                             others=tuple(p for p in notebooks_in(folder) if p != nb))
            sub.sha256 = sha256(nb) if nb else ""
            found.append(sub)
    return found


def _known(assignments: frozenset[str] | None) -> frozenset[str]:
    return frozenset(exercise_ids() if assignments is None else assignments)


def strays(submissions: Path, assignments: frozenset[str] | None = None) -> list[str]:
    """The folders of ``submissions`` that :func:`discover` does not take for a submission,
    since their name is none of the course's assignments (a typo, ``Exercise 1``, a name
    made to be a formula: ``=HYPERLINK(...)``), each as ``student/folder`` written with
    :func:`ascii` (escaped, never raw: the warning names them, no file and no export
    does)."""
    known = _known(assignments)
    return [ascii(f"{student.name}/{folder.name}")
            for student in sorted(p for p in submissions.iterdir() if p.is_dir())
            for folder in sorted(p for p in student.iterdir() if p.is_dir())
            if folder.name not in known]


def notebooks_in(folder: Path) -> list[Path]:
    """The notebooks of a submission folder, by name; hidden files (a name starting with
    ".", such as the ``._`` copies macOS puts in zips) are not the learner's notebooks."""
    return sorted(p for p in folder.glob("*.ipynb") if not p.name.startswith("."))


def choose_notebook(folder: Path, assignment: str
                    ) -> tuple[Path | None, str, tuple[Status, str] | None]:
    """(the notebook to grade, a note saying why when the folder holds others, None), or
    (None, "", (``several-notebooks``, detail)) when the instructor must choose.

    ``<assignment>.ipynb`` is graded when present (the notebook nbgrader grades); else a
    folder's one notebook, whatever its name (nbgrader zip_collect's ``attempt1.ipynb``);
    else, of several, the one notebook of this assignment (the others named with why
    not). No notebook: (None, "", None), which pre-validation calls ``missing-notebook``.
    """
    named = folder / f"{assignment}.ipynb"
    found = notebooks_in(folder)
    others = [p.name for p in found if p.name != named.name]
    if named.is_file() or named.is_symlink() or named.exists():
        note = (f"also in the submission folder, not graded: {', '.join(others)} "
                f"({named.name} is graded, the notebook nbgrader grades)") if others else ""
        return named, note, None
    if len(found) <= 1:
        return (found[0] if found else None), "", None
    ours = [p for p in found if is_notebook_of(p, assignment)]
    if len(ours) == 1:
        rest = ", ".join(p.name for p in found if p != ours[0])
        return ours[0], (f"{len(found)} notebooks in the submission folder, none named "
                         f"{named.name}: {ours[0].name} is graded, the only one that is a "
                         f"notebook of {assignment} (not: {rest})"), None
    which = (f"{len(ours)} of them are notebooks of {assignment}" if ours else
             f"none of them is a notebook of {assignment}")
    return None, "", (Status.SEVERAL_NOTEBOOKS, (
        f"{len(found)} notebooks in the submission folder and none named {named.name}: "
        f"{', '.join(others)}; {which}, so none is graded. Keep the one to grade there, "
        f"or name it {named.name}, and grade again"))


def is_notebook_of(path: Path, assignment: str) -> bool:
    """Whether ``path`` reads as a notebook that pre-validation takes for ``assignment``'s:
    it has a cell of the assignment and its read-only cells are not another's."""
    try:
        text = read_submitted(path).decode("utf-8")
        if beyond_limits(json.loads(text)):  # not read further: a notebook too large
            return False
        nb = nbformat.reads(text, as_version=4)
        released = set(released_cells(assignment))  # none: an unknown assignment
    except Exception:  # noqa: BLE001 - unreadable, not JSON, not a notebook: not of it
        return False
    return bool(grade_ids(nb) & released) and identify_assignment(nb) in (None, assignment)


def beyond_limits(data) -> str:
    """What makes the parsed JSON ``data`` of a notebook too large to grade ("" when
    nothing does): more than :data:`MAX_CELLS` cells, more than :data:`MAX_SOURCE_CHARS`
    characters of cell source in all, or JSON nested deeper than :data:`MAX_DEPTH`."""
    cells = data.get("cells") if isinstance(data, dict) else None
    if isinstance(cells, list):
        if len(cells) > MAX_CELLS:
            return (f"it has {len(cells)} cells, more than the {MAX_CELLS} a notebook may "
                    "have to be graded")
        chars = 0
        for c in cells:
            src = c.get("source", "") if isinstance(c, dict) else ""
            chars += len(src) if isinstance(src, str) else sum(
                len(x) for x in src if isinstance(x, str)) if isinstance(src, list) else 0
        if chars > MAX_SOURCE_CHARS:
            return (f"its cells hold {chars:,} characters of source, more than the "
                    f"{MAX_SOURCE_CHARS:,} a notebook may have to be graded")
    stack = [(data, 1)]  # iteratively: a recursion is what the limit protects
    while stack:
        obj, depth = stack.pop()
        if depth > MAX_DEPTH:
            return (f"its JSON is nested more than {MAX_DEPTH} levels deep, deeper than a "
                    "notebook may be to be graded")
        if isinstance(obj, dict):
            stack.extend((v, depth + 1) for v in obj.values() if isinstance(v, (dict, list)))
        elif isinstance(obj, list):
            stack.extend((v, depth + 1) for v in obj if isinstance(v, (dict, list)))
    return ""


def read_timestamp(path: Path) -> str | None:
    """A submission's ``timestamp.txt`` as text (None when there is none); NotAFile when
    it is a link, a FIFO or larger than 4 KiB."""
    try:
        return read_submitted(path, 4096).decode("utf-8", errors="replace").strip()
    except FileNotFoundError:
        return None
