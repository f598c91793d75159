"""Checks for ``ex08_rust_attention`` (softmax and attention in pure Rust).

The behaviour checks are exercise 1's (:mod:`autograder.checks.ex01`), called on the Rust
functions: the same known values, random shapes, stability, T_q != T_k and errors (a Rust
``Err`` is a ``ValueError``). When grading, those are the functions the grader compiled
itself from the notebook's ``%%rust`` solution cells and runs in its own sandboxed process
(:class:`autograder.rust_build.BuiltRust`, through :data:`autograder.checker.BUILT`): no
Python object of the learner's can pose as them. The course's own tests and ``check``
pass the kernel's :class:`autograder.rust_ffi.RustFunction` objects, which are accepted too.
Each check first makes sure it was given one of those two, not a Python function of the
same name. :func:`uses_only_safe_std` is judged by construction: the functions work in the
sandbox (no files, network or processes there) and the cells compile under
``#![forbid(unsafe_code)]``; nothing is read from the text.
"""

from __future__ import annotations

import ctypes
from typing import Callable

from autograder.checks import knowledge as _knowledge  # bound now: private in the kernel
from autograder.checks import ex01
from autograder.rust_ffi import RustFunction
from autograder.rust_source import RustSource
from autograder.rust_build import BuiltRust
from autograder.rust_compile import forbid_problem
from autograder.testing import call_learner, fail


def _is_rust_function(fn) -> bool:
    """A :class:`~autograder.rust_ffi.RustFunction` calling into a compiled library. By name, not
    ``isinstance``: the notebook may load its own copy of :mod:`autograder.rust_ffi`."""
    return (type(fn).__name__ == RustFunction.__name__
            and type(fn).__module__ == RustFunction.__module__
            and isinstance(getattr(fn, "_fn", None), ctypes._CFuncPtr))


def _rust(fn: Callable, name: str):
    """``fn`` if it is the Rust function ``name`` (built by the grader, or compiled by
    ``%%rust``); else a failure."""
    if (type(fn) is BuiltRust or _is_rust_function(fn)) and fn.__name__ == name:
        return fn
    fail(f"{name} should be the Rust function compiled from your %%rust cell, got "
         f"{type(fn).__name__} {getattr(fn, '__name__', '')!s}: did the cell compile?")


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


def _forbid_problem(softmax, attention) -> str | None:
    """rustc's message when the crate of the two functions does not compile under
    ``#![forbid(unsafe_code)]``, else None."""
    if type(softmax) is BuiltRust and type(attention) is BuiltRust:
        problems = {f.program.build.forbid_error for f in (softmax, attention)}
        return "\n\n".join(sorted(p for p in problems if p)) or None
    files: dict[str, RustSource] = {}
    for fn in (softmax, attention):  # the kernel's crates (attention's is the later one)
        for f in getattr(fn, "rust_sources", ()):
            files[f.name] = f
    return forbid_problem(list(files.values()))


def uses_only_safe_std(softmax: Callable, attention: Callable) -> None:
    """Both functions work, in the grader's sandboxed process where the standard library
    finds no file, network or program to start (a ``std::fs``, ``std::net`` or
    ``std::process`` call fails there; one that is never executed costs nothing), and the
    Rust cells compile under ``#![forbid(unsafe_code)]``: no ``unsafe`` block, function,
    impl or trait, no ``#[no_mangle]``, ``#[export_name]`` or ``#[link_section]``, and an
    inner ``#[allow(unsafe_code)]`` cannot lift it. Nothing is judged from the text."""
    softmax = _rust(softmax, "softmax")
    attention = _rust(attention, "scaled_dot_product_attention")
    call_learner(softmax, [0.0, 1.0], what="softmax([0, 1])")
    call_learner(attention, [[1.0]], [[1.0]], [[1.0]], what="attention of 1 x 1 matrices")
    problem = _forbid_problem(softmax, attention)
    if problem:
        fail("your Rust cells do not compile under #![forbid(unsafe_code)] (this exercise is "
             "safe Rust: no unsafe, #[no_mangle], #[export_name] or #[link_section]); rustc "
             "says:\n" + problem[:3000])


knowledge_check = _knowledge.check_for("ex08_rust_attention", __name__)
