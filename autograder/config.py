"""The course's folders, course id and stubs, shared by nbgrader's settings
(:func:`autograder.nbgrader_settings.apply`), grading and the learner's kernel.

The repository root is the nbgrader course directory: ``solutions/`` is nbgrader's source
directory and ``exercises/`` its release directory. Grading state (submitted, autograded and
feedback folders and the gradebook) lives in a workspace that git ignores, ``.grading/`` by
default.
"""

from __future__ import annotations

from pathlib import Path

from autograder import env_vars
from autograder.verdicts import TEXT_STUB  # noqa: F401 - defined where the pure readers need it

REPO = Path(__file__).resolve().parent.parent
# An installed wheel's copy of the course's notebooks (setup.py writes it): each exercise's
# released notebook, and the same with its test cells whole (hidden parts, no solution).
BUNDLED = Path(__file__).resolve().parent / "course"


def _course_folder(name: str, bundled: Path) -> Path:
    """The repository's folder ``name``, or the wheel's ``bundled`` copy where the package
    is installed without the repository around it."""
    here = REPO / name
    return here if here.is_dir() or not bundled.is_dir() else bundled


# $AUTOGRADER_SOLUTIONS: another source folder (a course's own copy of solutions/, or a
# test's copy with a changed hidden test); grading and release read the sources there.
SOLUTIONS = Path(env_vars.SOLUTIONS.get()
                 or _course_folder("solutions", BUNDLED / "source")).resolve()
EXERCISES = _course_folder("exercises", BUNDLED / "release")
DEFAULT_WORKSPACE = REPO / ".grading"
COURSE_ID = "attention-course"

# The stub nbgrader puts where a solution was.
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
# TEXT_STUB, nbgrader's stub of a written answer, is defined in autograder.verdicts.
# The stub of a solution region in a ``%%rust`` cell (ex08): valid Rust that compiles.
RUST_STUB = "// YOUR CODE HERE\ntodo!()"
