"""Checks for ``ex08_rust_attention`` (softmax and attention in pure Rust).

The behaviour checks are exercise 1's (:mod:`autograder.checks.ex01`), called on the Rust
functions through the course's glue (:mod:`autograder.rust`): the same known values,
random shapes, stability, T_q != T_k and errors (a Rust ``Err`` is a ``ValueError``).
Each first makes sure it was given a function compiled from a ``%%rust`` cell, not a
Python function of the same name. :func:`uses_only_safe_std` checks the Rust source the
cell magic recorded.
"""

from __future__ import annotations

import ctypes
import re
from typing import Callable

from autograder.checks import knowledge as _knowledge  # bound now: private in the kernel
from autograder.checks import ex01
from autograder.rust import RustFunction
from autograder.testing import call_learner, fail


def _is_rust_function(fn) -> bool:
    """A :class:`~autograder.rust.RustFunction` calling into a compiled library. By name, not
    ``isinstance``: in the grading sandbox the checks and the notebook load their own copies
    of :mod:`autograder.rust` (see :mod:`autograder.kernel_guard`)."""
    return (type(fn).__name__ == RustFunction.__name__
            and type(fn).__module__ == RustFunction.__module__
            and isinstance(getattr(fn, "_fn", None), ctypes._CFuncPtr))


def _rust(fn: Callable, name: str) -> RustFunction:
    """``fn`` if it is the Rust function ``name`` compiled by ``%%rust``; else a failure."""
    if not _is_rust_function(fn) or fn.__name__ != name:
        fail(f"{name} should be the Rust function compiled from your %%rust cell, got "
             f"{type(fn).__name__} {getattr(fn, '__name__', '')!s}: did the cell compile?")
    return fn


def _on_rust(check: Callable, name: str, what: str) -> Callable[[Callable], None]:
    """ex01's ``check``, called on the Rust function ``name`` (after :func:`_rust`)."""
    def run(fn: Callable) -> None:
        check(_rust(fn, name))

    run.__name__ = run.__qualname__ = check.__name__
    run.__doc__ = f"ex01's check on the Rust {name}: {what}."
    return run


_SOFTMAX, _ATTENTION = "softmax", "scaled_dot_product_attention"
# (ex01 check, Rust function it is called on, what it checks): each becomes a check here
# of the same name, which the notebook's hidden tests call as ``ex08.<name>``.
ON_RUST = [
    ("softmax_matches_reference", _SOFTMAX, "random rows equal the reference"),
    ("softmax_is_stable", _SOFTMAX, "scores of magnitude 1000 and more"),
    ("softmax_rejects_empty", _SOFTMAX, "an empty row is an Err (ValueError)"),
    ("attention_matches_reference", _ATTENTION, "random square inputs equal the reference"),
    ("attention_rectangular", _ATTENTION, "T_q != T_k"),
    ("attention_is_stable", _ATTENTION, "scores near +-1000"),
    ("attention_rejects_bad_input", _ATTENTION, "empty, ragged or mismatched input is an Err"),
]
for _check, _name, _what in ON_RUST:
    globals()[_check] = _on_rust(getattr(ex01, _check), _name, _what)


# Comments, string and character literals: their text is not code.
_NOT_CODE = re.compile(r'//[^\n]*|/\*.*?\*/|r(#*)".*?"\1|b?"(?:\\.|[^"\\])*"|'
                       r"b?'(?:\\.|[^'\\])'", re.S)
BANNED = [
    (re.compile(r"\bunsafe\b"), "`unsafe`: this exercise is safe Rust"),
    (re.compile(r"\bextern\b"), "`extern`: the course provides the glue to Python"),
    (re.compile(r"\bstd::(process|fs|net)\b"), "`std::{0}`: attention needs no {1}"),
    (re.compile(r"\bstd::\{[^}]*\b(process|fs|net)\b"), "`std::{0}`: attention needs no {1}"),
    (re.compile(r"\bstd::\*"), "`std::*`: it imports std::process, std::fs and std::net"),
    (re.compile(r"\binclude(?:_str|_bytes)?!"), "`include!`-style macros: they read files"),
]
_WHAT = {"process": "processes", "fs": "files", "net": "network"}


def banned_uses(source: str) -> list[str]:
    """What Rust ``source`` uses that the exercise forbids, with line numbers."""
    def blank(m: re.Match) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    code = _NOT_CODE.sub(blank, source)
    found = []
    for lineno, line in enumerate(code.split("\n"), start=1):
        line = re.sub(r"\s*::\s*", "::", line)
        for pattern, message in BANNED:
            for m in pattern.finditer(line):
                what = m.group(1) if m.groups() else ""
                found.append(f"line {lineno}: {message.format(what, _WHAT.get(what, ''))}")
    return found


def uses_only_safe_std(softmax: Callable, attention: Callable) -> None:
    """Both functions work, and the Rust cells they were compiled from use no ``unsafe``,
    ``extern``, ``std::process``, ``std::fs`` or ``std::net`` (nor file-reading macros)."""
    softmax = _rust(softmax, "softmax")
    attention = _rust(attention, "scaled_dot_product_attention")
    call_learner(softmax, [0.0, 1.0], what="softmax([0, 1])")
    call_learner(attention, [[1.0]], [[1.0]], [[1.0]], what="attention of 1 x 1 matrices")
    problems = []
    for f in dict.fromkeys(softmax.rust_sources + attention.rust_sources):
        problems += [f"{f.name} {p}" for p in banned_uses(f.text)]
    if problems:
        fail("your Rust cells use what this exercise forbids: " + "; ".join(problems))


knowledge_check = _knowledge.check_for("ex08_rust_attention", __name__)
