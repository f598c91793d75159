"""What a failed check raises and says (:class:`CheckFailed`, :func:`fail`), and what it
may show: in a hidden case or a hidden part of a test (:func:`in_hidden_part`), no value and
no message of the learner's exception (:func:`raised`). Standard library only (the website's
in-page checker imports it); :mod:`autograder.testing` re-exports every name."""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import sys

class CheckFailed(AssertionError):
    """A graded behaviour is not met; the message says which one and why."""


HIDDEN_CASE = "in a hidden case of this test: "


def mark_hidden_case(message: str) -> str:
    """A failure message of a hidden case, said to be one: the row's sentence describes the
    visible example, not this case (its own sizes and values). A knowledge check's verdict
    is no case and keeps its text."""
    if message.startswith(("Knowledge check", HIDDEN_CASE)):
        return message
    return HIDDEN_CASE + message


def fail(message: str) -> None:
    """Raise :class:`CheckFailed` with ``message``."""
    raise CheckFailed(message)


# Whether the check running now is a hidden part of a test cell: the trusted checker sets
# it (autograder.checker.run_test). A hidden case's inputs (those of a hidden part, or made
# by a check of autograder.checks) reach no feedback, so there a learner's exception is
# shown by its kind only (the message can carry the inputs: ``raise ValueError(f"{row}")``,
# a Rust ``Err`` text) and no value of the learner's output or of the expected answer is
# shown, only how far they differ.
_HIDDEN = contextvars.ContextVar("autograder_hidden_part", default=False)


def in_hidden_part() -> bool:
    """Whether the case being judged now is a hidden one: a hidden part of a test (see
    :func:`hidden_part`), or a check of :mod:`autograder.checks` (the trusted side, whose
    inputs no learner sees, even where a visible part calls it)."""
    if _HIDDEN.get():
        return True
    frame = sys._getframe(1)
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith("autograder.checks."):
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def hidden_part(hidden: bool = True):
    """Run the block as a hidden part of a test (``hidden``) or a visible one: the failure
    messages of the helpers here then show no learner message and no value."""
    token = _HIDDEN.set(bool(hidden))
    try:
        yield
    finally:
        _HIDDEN.reset(token)


def error_kind(exc: BaseException | None = None, *, kinds: list | tuple = ()) -> str:
    """The name of the built-in exception class ``exc`` is (or, for an exception reported as
    data, the first built-in name of ``kinds``): ``ValueError`` for a learner's
    ``class Row1p25(ValueError)``, whose name could carry an input; ``Exception`` when none."""
    if exc is not None:  # a built-in class itself, never a class that only bears its name
        return next(k.__name__ for k in type(exc).__mro__
                    if getattr(builtins, k.__name__, None) is k)
    for k in kinds:
        cls = getattr(builtins, k, None) if type(k) is str else None
        if isinstance(cls, type) and issubclass(cls, BaseException):
            return k
    return "Exception"


def course_raised(exc: BaseException | None) -> bool:
    """Whether ``exc`` is an error the course's own glue raised about the learner's code,
    not one out of the learner's code: a Rust compile error
    (:class:`autograder.rust_source.RustCompileError`, the class itself, raised in this process:
    rustc's messages about the learner's own cells, which carry no hidden input). It keeps
    its name and message in a hidden case too, so that every test that needs the cells says
    they do not compile. A learner's exception that the checker stands in for is a class of
    the module ``learner``, never this one."""
    rust = sys.modules.get("autograder.rust_source")  # not loaded: nothing raised one
    compile_error = getattr(rust, "RustCompileError", None)
    return exc is not None and compile_error is not None and type(exc) is compile_error


def raised(exc: BaseException | None = None, *, name: str = "", message: str = "",
           kinds: list | tuple = ()) -> str:
    """How an exception of the learner's code is named in a failure: ``ValueError: its
    message`` in a visible case, ``ValueError`` alone in a hidden one (:func:`error_kind`;
    the message and the class's own name can carry hidden inputs). ``exc``, or one reported
    as data (``name``, ``message``, ``kinds``: a probe's report)."""
    if in_hidden_part() and not course_raised(exc):
        return f"{error_kind(exc, kinds=kinds)} (a hidden case: its message is not shown)"
    if exc is not None:
        name, message = type(exc).__name__, str(exc)
    return f"{name}: {message}" if str(message) else str(name)
