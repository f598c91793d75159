"""The registry of exercises, derived from ``solutions/``: every folder ``exNN_name`` that
holds the nbgrader source ``exNN_name.ipynb`` is an exercise. Adding the folder is what
makes ``release``, ``grade`` and the tests see a new exercise; CONTRIBUTING.md lists the
other steps and ``tests/test_exercise_registry.py`` checks each of them."""

from __future__ import annotations

import re
from pathlib import Path

from autograder.config import SOLUTIONS

ID_PATTERN = re.compile(r"ex\d\d_[a-z0-9_]+")


def exercise_ids(solutions: Path = SOLUTIONS) -> tuple[str, ...]:
    """Ids of the exercises under ``solutions`` in order (``ex01_...``, ``ex02_...``)."""
    if not solutions.is_dir():
        return ()
    return tuple(sorted(p.name for p in solutions.iterdir()
                        if p.is_dir() and ID_PATTERN.fullmatch(p.name)
                        and (p / f"{p.name}.ipynb").is_file()))


ASSIGNMENTS = exercise_ids()

# Exercises whose hidden tests run in the trusted checker (:mod:`autograder.checker`): every
# one. Their kernels hold no reference, check or answer (ex07's holds the helpers its
# notebook gives, autograder.transformer_given). ex06's peak memory is measured by the
# grader, from outside, in a memory cgroup of its own (autograder.peak_probe); ex08's Rust
# is built and run by the grader (autograder.rust_build). A new exercise's checks are
# written for the checker (CONTRIBUTING.md): there is no other way to grade.
TRUSTED = frozenset(ASSIGNMENTS)


def assignment_of_path(path: Path) -> str | None:
    """The assignment a file's name says it is: its stem or its folder, when either is an id."""
    for name in (Path(path).stem, Path(path).parent.name):
        if name in ASSIGNMENTS:
            return name
    return None


def trusted(assignment: str) -> bool:
    """Whether ``assignment``'s hidden tests run in the checker, outside the kernel."""
    return assignment in TRUSTED
