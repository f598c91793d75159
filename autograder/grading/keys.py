"""What a grade depends on, and its digest: a row of ``grades.csv`` is regraded when any
input that can change it changes, not only the notebook.

The inputs of one submission's grade are: the notebook's bytes (and those of the other
notebooks in its folder, when there are any), its ``timestamp.txt``, the
assignment's due date and the learner's extension in the gradebook, the ``--late-penalty``
option, the assignment's nbgrader source (``solutions/<id>/<id>.ipynb``: its visible and
hidden tests and the released notebook generated from it) and the check code the hidden
tests call (:data:`CHECK_CODE`). :func:`inputs` lists them; :func:`digest` is the key
stored with the row (the ``inputs_sha256`` of the workspace's side table).
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from autograder.config import REPO
from autograder.grading.submission import read_submitted

# The code behind the hidden tests (relative to the repository): a fix there changes grades.
CHECK_CODE = ("autograder/checks", "autograder/reference", "autograder/testing.py",
              "autograder/check_failure.py", "autograder/closeness.py", "autograder/python_only.py",
              "autograder/diagnose.py", "autograder/diagnose_encoding.py",
              "autograder/diagnose_heads.py", "autograder/rust.py", "autograder/rust_source.py",
              "autograder/rust_glue.py", "autograder/rust_ffi.py", "autograder/rust_build.py",
              "autograder/rust_compile.py", "autograder/rust_main.py",
              "autograder/rust_program.py", "autograder/rust_protocol.py",
              "autograder/rust_toolchain.py")


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and p.suffix not in (".pyc", ".pyo"))


@functools.lru_cache(maxsize=None)
def check_code_digest(root: Path = REPO) -> str:
    """SHA-256 over the relative paths and bytes of every file of :data:`CHECK_CODE`."""
    h = hashlib.sha256()
    for name in CHECK_CODE:
        for f in _files(root / name):
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def file_digest(path: Path | None) -> str:
    """SHA-256 of a file's bytes, "" when there is no such file."""
    try:
        return hashlib.sha256(read_submitted(Path(path))).hexdigest() if path else ""
    except OSError:  # absent, or not a plain file (prevalidate says why)
        return ""


def schedule(gb, assignment: str, student_id: str) -> tuple[str, str]:
    """(due date, extension) of a learner's assignment in the gradebook ``gb``, as text;
    "" for none (an assignment or submission the gradebook does not know yet)."""
    from nbgrader.api import MissingEntry

    try:
        due = gb.find_assignment(assignment).duedate
    except MissingEntry:
        return "", ""
    try:
        extension = gb.find_submission(assignment, student_id).extension
    except MissingEntry:
        extension = None
    return (str(due) if due else ""), (str(extension) if extension else "")


def inputs(sub, *, due: str, extension: str, late_penalty: str, source: Path,
           check_code: str) -> dict[str, str]:
    """The inputs of ``sub``'s grade (a :class:`~autograder.grading.submission.Submission`),
    name -> value or digest; the names are said when a row is regraded."""
    timestamp = sub.path.parent / "timestamp.txt" if sub.path else None
    values = {"notebook": sub.sha256, "timestamp": file_digest(timestamp), "due date": due,
              "extension": extension, "late penalty": late_penalty,
              "source notebook": file_digest(source), "check code": check_code}
    if sub.others:  # which notebook is graded depends on them too (submission.choose_notebook)
        values["other notebooks"] = digest({p.name: file_digest(p) for p in sub.others})
    return values


def digest(values: dict[str, str]) -> str:
    """The key of a row: SHA-256 of its inputs (any change of any input changes it)."""
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()


def changed(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """Names of the inputs that differ between two :func:`inputs` dicts."""
    return [k for k in new if old.get(k) != new[k]]
