"""Assertion helpers for the notebooks' test cells.

Every helper raises ``AssertionError`` with a message that names the behaviour that
failed and how far off the answer was, never the hidden expected value, so that feedback
teaches without giving the answer away.

Every helper the pure-Python exercise's tests call (exercise 1) needs the standard library
only: the website runs them in the browser's Python (``_ext/course_runner.py``), which has
no NumPy. Plain Python numbers and lists are compared in Python, arrays and tensors with
NumPy, with the same messages (``tests/test_testing_helpers.py`` compares the two).
"""

from __future__ import annotations

import contextlib
import math
import numbers
from typing import TYPE_CHECKING, Any, Callable

from autograder.brief_tracebacks import install as show_check_failures_briefly
# The names below live in these modules; test cells, the checks and the checker import them
# from here (the released notebooks: assert_close, fail).
from autograder.check_failure import (HIDDEN_CASE, CheckFailed, course_raised, error_kind, fail,
                                      hidden_part, in_hidden_part, mark_hidden_case, raised)
from autograder.closeness import assert_close
from autograder.python_only import BANNED_MODULES, check_pure_python, referenced_values
# NumPy is imported where an array is checked (check_array, some_true_per_row), not here:
# exercise 1 and the website's in-page tier (no NumPy) never need it.
if TYPE_CHECKING:
    import numpy as np


__all__ = ["BANNED_MODULES", "HIDDEN_CASE", "CheckFailed", "assert_close", "call_learner",
           "check_answer", "check_array", "check_list_of_floats", "check_matrix_of_floats",
           "check_pure_python", "check_tensor", "check_type", "course_raised", "error_kind",
           "expect_value_error", "explain", "fail", "hidden_part", "in_hidden_part",
           "mark_hidden_case", "raised", "referenced_values", "some_true_per_row",
           "traced_peak"]


def call_learner(fn: Callable, *args, what: str, within=None,
                 hint: Callable[[BaseException], str] | None = None, **kwargs):
    """Call a learner's function; turn the stub or any exception into a clear failure.

    ``within``: a context manager the call runs in, such as ``np.errstate(all="ignore")``
    or ``torch.no_grad()``. ``hint``: names the likely mistake behind an exception (such
    as :func:`autograder.diagnose_python.exception_hint`), appended when not ''.
    """
    try:
        with within if within is not None else contextlib.nullcontext():
            return fn(*args, **kwargs)
    except NotImplementedError as exc:
        # ex08's Rust stub is todo!(), which autograder.rust raises as RustNotImplemented
        stub = ("still reaches the stub's todo!()" if type(exc).__name__ == "RustNotImplemented"
                else "the stub raises NotImplementedError")
        fail(f"{what}: not implemented yet ({stub})")
    except Exception as exc:  # noqa: BLE001 - a learner's code may raise anything
        extra = hint(exc) if hint is not None else ""
        fail(f"{what}: raised {raised(exc)}" + (f". Hint: {extra}." if extra else ""))


def check_type(value: Any, expected: type | tuple[type, ...], what: str) -> None:
    """Check ``type(value)`` is exactly one of ``expected`` (no subclasses such as np.float64)."""
    types = expected if isinstance(expected, tuple) else (expected,)
    if type(value) not in types:
        names = " or ".join(t.__name__ for t in types)
        fail(f"{what} should be a {names}, got {type(value).__name__}")


def check_array(value: Any, shape: tuple, what: str) -> np.ndarray:
    """Check ``value`` is a ``numpy.ndarray`` of ``shape``; return it."""
    import numpy as np

    if not isinstance(value, np.ndarray):
        fail(f"{what} should be a numpy.ndarray, got {type(value).__name__}")
    if value.shape != tuple(shape):
        fail(f"{what}: shape should be {tuple(shape)}, got {value.shape}")
    return value


def check_tensor(value: Any, shape: tuple, what: str, *, device: str | None = None,
                 dtype=None, finite: bool = False):
    """Check ``value`` is a ``torch.Tensor`` of ``shape`` (on ``device``'s type, of
    ``dtype``, without NaN or infinity when ``finite``); return it."""
    import torch

    if not isinstance(value, torch.Tensor):
        fail(f"{what} should be a torch.Tensor, got {type(value).__name__}")
    if tuple(value.shape) != tuple(shape):
        fail(f"{what}: shape should be {tuple(shape)}, got {tuple(value.shape)}")
    if device is not None and value.device.type != torch.device(device).type:
        fail(f"{what}: should be on {device} like its inputs, got {value.device}")
    if dtype is not None and value.dtype != dtype:
        fail(f"{what}: dtype should be {dtype}, got {value.dtype}")
    if finite and not torch.isfinite(value).all():
        fail(f"{what} contains NaN or infinity")
    return value


def some_true_per_row(rng, shape: tuple, p: float = 0.6):
    """A random boolean mask of ``shape`` with at least one True in every row (no fully
    masked query): a NumPy array from a ``np.random.Generator``, a tensor from a
    ``torch.Generator``."""
    import numpy as np

    if isinstance(rng, np.random.Generator):
        m = rng.random(shape) < p
        idx = rng.integers(0, shape[-1], size=shape[:-1])
        np.put_along_axis(m, idx[..., None], True, axis=-1)
        return m
    import torch

    m = torch.rand(*shape, generator=rng) < p
    idx = torch.randint(0, shape[-1], shape[:-1], generator=rng)
    m.scatter_(-1, idx.unsqueeze(-1), True)
    return m


def check_matrix_of_floats(value: Any, rows: int, cols: int, what: str) -> None:
    """Check a pure-Python list of ``rows`` lists of ``cols`` Python floats."""
    check_type(value, list, what)
    if len(value) != rows:
        fail(f"{what} should have {rows} rows, got {len(value)}")
    for i, row in enumerate(value):
        check_type(row, list, f"{what}[{i}]")
        if len(row) != cols:
            fail(f"{what}[{i}] should have {cols} entries, got {len(row)}")
        for j, x in enumerate(row):
            check_type(x, float, f"{what}[{i}][{j}]")


def check_list_of_floats(value: Any, length: int, what: str) -> None:
    """Check a pure-Python list of ``length`` Python floats."""
    check_type(value, list, what)
    if len(value) != length:
        fail(f"{what} should have {length} entries, got {len(value)}")
    for j, x in enumerate(value):
        check_type(x, float, f"{what}[{j}]")



@contextlib.contextmanager
def explain(hint: Callable[[], str]):
    """Append ``hint()`` (a diagnosis of the mistake, see :mod:`autograder.diagnose`) to a
    failure raised inside the block."""
    try:
        yield
    except CheckFailed as exc:
        try:
            extra = hint()
        except Exception:  # noqa: BLE001 - a diagnosis must never hide the failure
            extra = ""
        if extra:
            text = str(exc).rstrip()
            raise CheckFailed(f"{text}{'' if text.endswith('.') else '.'} Hint: {extra}.") \
                from None
        raise


def expect_value_error(fn: Callable, args: tuple, what: str,
                       mentions: tuple[str, ...] = ()) -> None:
    """Check that ``fn(*args)`` raises ValueError with a message (not another error, not a
    result, not a bare ``ValueError()``). With ``mentions``, the message must contain at
    least one of those texts (the offending argument's name or value)."""
    try:
        fn(*args)
    except ValueError as exc:
        if not str(exc).strip():
            fail(f"{what}: raises ValueError with no message; say which shape or value is "
                 "wrong")
        if mentions and not any(m in str(exc) for m in mentions):
            fail(f"{what}: the ValueError's message should name the offending argument "
                 f"({' or '.join(repr(m) for m in mentions)})"
                 + ("" if in_hidden_part() else f", got: {exc}"))
        return
    except Exception as exc:  # noqa: BLE001 - a learner's code may raise anything
        fail(f"{what}: should raise ValueError, raised {raised(exc)}")
    fail(f"{what}: should raise ValueError, but returned a result")


def traced_peak(fn: Callable, *args, **kwargs) -> tuple[Any, int]:
    """``(fn(*args, **kwargs), the peak bytes tracemalloc traced during the call)``: the
    visible memory tests' self-check, in the learner's own kernel (NumPy's allocations).

    A learner's function that the trusted checker calls in the kernel
    (:class:`autograder.remote.Remote`) does not allocate in the checker's process, so
    there is nothing here to trace: its peak is given as 0 and the hidden test measures
    the call from outside (:mod:`autograder.peak_probe`)."""
    import tracemalloc

    if type(fn).__module__ == "autograder.remote":
        return fn(*args, **kwargs), 0
    if tracemalloc.is_tracing():
        raise RuntimeError("tracemalloc is already tracing; measure one call at a time")
    tracemalloc.start()
    try:
        result = fn(*args, **kwargs)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def check_answer(answer: Any, expected: Any, question: str) -> None:
    """Check a knowledge-check answer.

    Strings compare case-insensitively after stripping spaces. An ``int`` expected answer
    (a count) is compared exactly: the answer must be a whole number (``3``, ``3.0`` or a
    NumPy integer) equal to it, so a parameter count that forgets 512 biases is wrong. A
    ``float`` expected answer is compared with a relative tolerance of 1e-3. Numbers may be
    Python or NumPy numbers, never bool. The comparison uses the answer's plain value
    (``str.__str__``, ``float()``, ``int()``), so an object whose ``__eq__`` always returns
    True gains nothing.
    """
    if answer is None or answer is Ellipsis:
        fail(f"{question}: no answer given yet")
    if isinstance(expected, str):
        if not isinstance(answer, str):
            fail(f"{question}: the answer should be a str, got {type(answer).__name__}")
        value = str.__str__(answer)
        ok = str.lower(str.strip(value)) == expected.strip().lower()
    elif isinstance(expected, (int, float)):
        if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
            fail(f"{question}: the answer should be a number, got {type(answer).__name__}")
        try:
            value = float(answer)
        except (TypeError, ValueError, OverflowError):
            fail(f"{question}: the answer should be a number, got {type(answer).__name__}")
        if isinstance(expected, int):
            if not math.isfinite(value) or value != int(value):
                fail(f"{question}: the answer should be a whole number, got {value!r}")
            value = int(value) if not isinstance(answer, numbers.Integral) else int(answer)
            ok = value == expected
        else:
            ok = math.isclose(value, float(expected), rel_tol=1e-3, abs_tol=1e-9)
    else:  # pragma: no cover - authors' mistake
        raise TypeError(f"unsupported expected answer type {type(expected).__name__}")
    if not ok:
        fail(f"{question}: {value!r} is not the right answer")



# In a learner's notebook, a failed check shows the cell line and the message, not the
# frames of these helpers (autograder.brief_tracebacks).
show_check_failures_briefly(CheckFailed)
