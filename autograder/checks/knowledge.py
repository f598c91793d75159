"""The expected answers of the knowledge checks, one table for every exercise.

They live here, in the hidden checks, and not in the notebooks' test cells: the source of a
test cell reaches the learner's kernel when the cell runs, where code the learner left
running could read an answer written in it. A test cell calls ``exNN.knowledge_check("kcN",
kcN_answer)``; the comparison is :func:`autograder.testing.check_answer`'s (strings without
case or surrounding spaces, counts exactly, other numbers to a relative 1e-3).
"""

from __future__ import annotations

from typing import Any

from autograder.testing import check_answer

ANSWERS: dict[str, dict[str, Any]] = {
    "ex01_python_attention": {
        "kc1": "b",
        "kc2": "b",
        "kc3": 0.75,
    },
    "ex02_numpy_attention": {
        "kc1": 10,
        "kc2": "a",
        "kc3": "b",
    },
    "ex03_scaling": {
        "kc1": "b",
        "kc2": "c",
        "kc3": 8.0,
    },
    "ex04_positional_encoding": {
        "kc1": 0.9646616199111993,
        "kc2": "b",
        "kc3": -0.4161468365471424,
    },
    "ex05_torch_attention": {
        "kc1": "b",
        "kc2": 1600,
        "kc3": 6,
    },
    "ex06_tiled_attention": {
        "kc1": 16,
        "kc2": 1.1536509221253468,
        "kc3": "b",
        "kc4": 1,
    },
    "ex07_transformer": {
        "kc1": 3152384,
        "kc2": "b",
        "kc3": "pre-norm",
        "kc4": 1 / 0.9,
    },
    "ex08_rust_attention": {
        "kc1": "b",
        "kc2": "a",
        "kc3": 96,
    },
}


def check(assignment: str, name: str, answer: Any) -> None:
    """Knowledge check ``name`` ("kc1", "kc2", ...) of ``assignment``: ``answer`` against
    its expected answer. Raises CheckFailed (wrong or missing answer) or KeyError (no such
    knowledge check: an author's mistake)."""
    expected = ANSWERS[assignment][name]
    check_answer(answer, expected, f"Knowledge check {name.removeprefix('kc')}")


def check_for(assignment: str, module: str):
    """The ``knowledge_check(name, answer)`` check of ``assignment``, as a function of the
    checks module ``module`` (the notebooks call ``exNN.knowledge_check("kcN", kcN_answer)``)."""
    def knowledge_check(name: str, answer: Any) -> None:
        check(assignment, name, answer)

    knowledge_check.__module__ = module
    knowledge_check.__doc__ = (f"Knowledge check ``name`` (\"kc1\", ...) of {assignment}: "
                               "``answer`` against the expected answer, which is kept in "
                               ":mod:`autograder.checks.knowledge`, never in a notebook cell.")
    return knowledge_check

