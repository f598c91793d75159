"""``assert_close``: how far a learner's numbers are from the expected ones, with a message
that names the largest error and shows no hidden value. Plain Python numbers and lists are
compared in Python (the website's in-page tier has no NumPy), arrays and tensors with NumPy,
with the same verdicts and messages. :mod:`autograder.testing` re-exports it."""

from __future__ import annotations

import importlib.util
import math
from typing import Any

from autograder.check_failure import fail, in_hidden_part

# NumPy is imported on the first array compared, not here: plain values (exercise 1, the
# website's in-page tier, which has no NumPy) never need it, and ``check`` on exercise 1
# starts 0.2 s sooner without it.
HAS_NUMPY = importlib.util.find_spec("numpy") is not None


def assert_close(
    actual: Any,
    expected: Any,
    what: str,
    *,
    rtol: float = 1e-7,
    atol: float = 0.0,
    show_expected: bool = False,
) -> None:
    """Compare ``actual`` with ``expected`` elementwise, as arrays of float64.

    Checks shape first, then finiteness, then |actual - expected| <= atol + rtol |expected|.
    The message gives the largest error; it shows the expected values only when
    ``show_expected`` is True (visible tests with known values), and no value at all in a
    hidden part of a test (:func:`in_hidden_part`). Plain Python numbers and
    (nested) lists or tuples of them are compared in Python, anything else with NumPy
    (``np.asarray``); both give the same verdict and message.

    Raises:
        CheckFailed: a different shape, a missing or extra infinity or NaN, a value off by
            more than the tolerance, or a result that is not an array of numbers.
    """
    if not HAS_NUMPY or (_plain(actual) and _plain(expected)):
        _assert_close_plain(actual, expected, what, rtol, atol, show_expected)
    else:
        _assert_close_array(actual, expected, what, rtol, atol, show_expected)


def _plain(value: Any) -> bool:
    """A Python number, or a list or tuple of plain values."""
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return type(value) in (int, float, bool)


def _flatten(value: Any) -> tuple[tuple[int, ...], list[float]]:
    """(shape, entries in row-major order) of nested lists of numbers, as NumPy reads them.
    Raises ValueError for rows of different lengths, TypeError or ValueError for an entry
    that is not a number."""
    if not isinstance(value, (list, tuple)):
        return (), [float(value)]
    parts = [_flatten(v) for v in value]
    shapes = {shape for shape, _ in parts}
    if len(shapes) > 1:
        raise ValueError(f"rows of different shapes {sorted(shapes)}")
    inner = parts[0][0] if parts else ()
    return (len(value), *inner), [x for _, flat in parts for x in flat]


def _nest(flat: list[float], shape: tuple[int, ...]) -> Any:
    """The inverse of :func:`_flatten`: nested lists of ``shape`` (a number for shape ())."""
    if not shape:
        return flat[0]
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _round6(x: float) -> float:
    """``np.round(x, 6)``: x scaled by 10^6, rounded half to even, scaled back (sign kept)."""
    if not math.isfinite(x):
        return x
    y = x * 1e6
    return math.copysign(round(y) / 1e6, y)


def _index(flat_index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The row-major multi-index of ``flat_index`` in ``shape``."""
    out = []
    for n in reversed(shape):
        flat_index, i = divmod(flat_index, n)
        out.append(i)
    return tuple(reversed(out))


def _value(x) -> str:
    """A value in a message: itself in a visible part, "a non-finite value" in a hidden one."""
    return "a non-finite value" if in_hidden_part() else str(x)


def _assert_close_plain(actual, expected, what, rtol, atol, show_expected) -> None:
    """:func:`assert_close` on plain Python values, without NumPy."""
    try:
        shape, a = _flatten(actual)
    except (TypeError, ValueError) as exc:
        fail(f"{what}: could not read the result as an array of numbers ({exc})")
    e_shape, e = _flatten(expected)
    if shape != e_shape:
        fail(f"{what}: shape should be {e_shape}, got {shape}")
    for k, (x, y) in enumerate(zip(a, e)):
        if math.isfinite(x) != math.isfinite(y):
            idx = _index(k, shape)
            if math.isfinite(y):
                fail(f"{what}: got {_value(x)} at index {idx} where a finite number was "
                     "expected")
            fail(f"{what}: got a finite number at index {idx} where {_value(y)} was expected")
    pairs = [(abs(x - y), atol + rtol * abs(y)) for x, y in zip(a, e) if math.isfinite(y)]
    if any(err > tol for err, tol in pairs):
        margins = [err - tol for err, tol in pairs]
        worst = margins.index(max(margins))
        msg = f"{what}: values differ (largest error {max(err for err, _ in pairs):.3g}"
        msg += f", allowed {pairs[worst][1]:.3g})"
        if show_expected and not in_hidden_part():
            msg += (f"; expected {_nest([_round6(y) for y in e], shape)}, "
                    f"got {_nest([_round6(x) for x in a], shape)}")
        fail(msg)


def _assert_close_array(actual, expected, what, rtol, atol, show_expected) -> None:
    """:func:`assert_close` with NumPy, for arrays, tensors and other array-likes."""
    import numpy as np
    try:
        a = np.asarray(actual, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        fail(f"{what}: could not read the result as an array of numbers ({exc})")
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        fail(f"{what}: shape should be {e.shape}, got {a.shape}")
    finite = np.isfinite(e)
    mismatch = np.isfinite(a) != finite
    if mismatch.any():
        idx = tuple(int(i) for i in np.argwhere(mismatch)[0])
        if finite[idx]:
            fail(f"{what}: got {_value(a[idx])} at index {idx} where a finite number was "
                 "expected")
        fail(f"{what}: got a finite number at index {idx} where {_value(e[idx])} was expected")
    with np.errstate(invalid="ignore"):  # inf - inf where both are infinite: masked out
        err = np.abs(a - e)[finite]
        tol = (atol + rtol * np.abs(e))[finite]
    if err.size and np.any(err > tol):
        worst = int(np.argmax(err - tol))
        msg = f"{what}: values differ (largest error {err.max():.3g}"
        msg += f", allowed {tol.flat[worst]:.3g})"
        if show_expected and not in_hidden_part():
            msg += f"; expected {np.round(e, 6).tolist()}, got {np.round(a, 6).tolist()}"
        fail(msg)
