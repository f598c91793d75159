"""The submission model: finding submissions in nbgrader's folder layout and
pre-validating one (readable, a notebook, of this assignment) before nbgrader sees it."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.grading.integrity import grade_ids, released_cells
from autograder.grading.results import Status
from autograder.grading.times import TimeNotRead, submission_time
from autograder.notebook import identify_assignment


@dataclass
class Submission:
    """One learner's submission of one assignment; ``path`` is only ever read."""

    student_id: str
    assignment: str
    path: Path | None  # the submitted notebook, None when the folder has none
    sha256: str = ""
    converted: bool = False  # an nbformat 3 notebook, upgraded before grading

    def cell_count(self) -> int:
        """Number of cells (0 when unreadable: the worker reports why)."""
        try:
            return len(json.loads(read_submitted(self.path)).get("cells", [])) if self.path else 0
        except Exception:  # noqa: BLE001 - unreadable files are reported by the worker
            return 0


# The largest submitted file read (a notebook with its outputs, a timestamp.txt).
MAX_SUBMITTED_BYTES = 64 * 2**20


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


def discover(submissions: Path) -> list[Submission]:
    """Submissions laid out as nbgrader's ``<student_id>/<assignment_id>/<assignment_id>.ipynb``.

    A folder without ``<assignment_id>.ipynb`` but with exactly one other notebook (nbgrader
    zip_collect's ``attempt1.ipynb``, say) is graded from that one.
    """
    found = []
    for student in sorted(p for p in submissions.iterdir() if p.is_dir()):
        for folder in sorted(p for p in student.iterdir() if p.is_dir()):
            nb = folder / f"{folder.name}.ipynb"
            if not (nb.is_file() or nb.is_symlink() or nb.exists()):
                others = sorted(folder.glob("*.ipynb"))
                nb = others[0] if len(others) == 1 else None
            sub = Submission(student.name, folder.name, nb)
            sub.sha256 = sha256(nb) if nb else ""
            found.append(sub)
    return found


def prevalidate(sub: Submission) -> tuple[nbformat.NotebookNode | None, tuple[Status, str] | None]:
    """(the submission as an nbformat 4 notebook, None) or (None, (status, detail)) saying
    why it cannot be graded: missing, empty, not JSON, not a notebook, another assignment."""
    if sub.path is None:
        return None, (Status.MISSING_NOTEBOOK, f"no {sub.assignment}.ipynb in the submission folder")
    try:
        for folder in (sub.path.parent, sub.path.parent.parent):  # nbgrader's two levels
            if folder.is_symlink():
                raise NotAFile(f"the folder {folder.name} is a link, not a folder of its own")
        raw = read_submitted(sub.path)
        read_timestamp(sub.path.parent / "timestamp.txt")
    except OSError as exc:
        return None, (Status.INVALID_NOTEBOOK, f"not read: {exc}")
    if not raw.strip():
        return None, (Status.INVALID_NOTEBOOK, "the file is empty")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, (Status.INVALID_NOTEBOOK, f"not valid JSON ({exc})")
    try:
        sub.converted = int(data.get("nbformat", 4)) < 4
        nb = nbformat.reads(json.dumps(data), as_version=4)
        if sub.converted:
            nbformat.validator.normalize(nb)
            for c in nb.cells:  # nbformat 3 has no cell ids
                c.setdefault("id", nbformat.corpus.words.generate_corpus_id())
            nb.nbformat_minor = max(nb.nbformat_minor, 5)
        nbformat.validate(nb)
    except Exception as exc:  # noqa: BLE001 - nbformat raises several kinds
        return None, (Status.INVALID_NOTEBOOK,
                      f"not a valid Jupyter notebook ({str(exc).splitlines()[0]})")
    if not (grade_ids(nb) & set(released_cells(sub.assignment))):
        return None, (Status.WRONG_ASSIGNMENT, f"no cell of {sub.assignment} found in the notebook")
    # Assignments share grade_ids (softmax, test_kc1...): judge by what the cells hold.
    actual = identify_assignment(nb)
    if actual is not None and actual != sub.assignment:
        return None, (Status.WRONG_ASSIGNMENT, f"this is the notebook of {actual}, not of "
                      f"{sub.assignment} (its read-only cells are those of {actual})")
    bad_time = check_timestamp(sub.path.parent / "timestamp.txt")
    if bad_time:
        return None, (Status.ERROR, bad_time)
    return nb, None


def check_timestamp(path: Path) -> str:
    """"" when ``path`` (a submission's ``timestamp.txt``) is absent or holds a time
    :func:`autograder.grading.times.submission_time` reads exactly; otherwise what is
    wrong, naming the file and its text."""
    text = read_timestamp(path)
    if text is None:
        return ""
    try:
        submission_time(text)
    except TimeNotRead as exc:
        return (f"{path.name} holds {text[:80]!r}, which is not read as a submission time: "
                f"{exc}. Write the time with its zone, for example 2026-12-01 18:30:00 UTC "
                "or 2026-12-01T19:30:00+01:00")
    return ""


def read_timestamp(path: Path) -> str | None:
    """A submission's ``timestamp.txt`` as text (None when there is none); NotAFile when
    it is a link, a FIFO or larger than 4 KiB."""
    try:
        return read_submitted(path, 4096).decode("utf-8", errors="replace").strip()
    except FileNotFoundError:
        return None
