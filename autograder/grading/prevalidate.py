"""A submission checked before nbgrader sees it (:func:`prevalidate`): readable, within the
limits a notebook may have to be graded, valid JSON and a notebook (nbformat 3 converted),
of this assignment, with a timestamp that is read exactly; otherwise the status and the
reason its row gets."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from autograder.grading.integrity import grade_ids, released_cells
from autograder.grading.results import Status
from autograder.grading.submission import (MAX_DEPTH, NotAFile, Submission, beyond_limits,
                                          read_submitted, read_timestamp)
from autograder.grading.times import TimeNotRead, submission_time
from autograder.notebook import identify_assignment


def prevalidate(sub: Submission) -> tuple[nbformat.NotebookNode | None, tuple[Status, str] | None]:
    """(the submission as an nbformat 4 notebook, None) or (None, (status, detail)) saying
    why it cannot be graded: refused at the door (:func:`~autograder.grading.submission.discover`), missing, empty, not
    JSON, not a notebook, another assignment."""
    if sub.refused:
        return None, sub.refused
    if sub.path is None:
        return None, (Status.MISSING_NOTEBOOK, (
            f"no notebook in the submission folder (no {sub.assignment}.ipynb, nor any "
            "other .ipynb file)"))
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
    except RecursionError:
        return None, (Status.INVALID_NOTEBOOK, f"its JSON is nested deeper than the "
                      f"{MAX_DEPTH} levels a notebook may have")
    too_much = beyond_limits(data)
    if too_much:
        return None, (Status.INVALID_NOTEBOOK, too_much)
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
