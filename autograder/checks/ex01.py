"""Checks for ``ex01_python_attention`` (pure-Python softmax and attention)."""

from __future__ import annotations

import random
from typing import Callable

from autograder.checker import without_libraries
from autograder.remote import Remote
from autograder.checks import knowledge as _knowledge  # bound now: private in the kernel
from autograder.diagnose_python import attention_hint, exception_hint, softmax_hint
from autograder.reference import python_attention as ref
from autograder.testing import call_learner as _call
from autograder.testing import (
    assert_close,
    explain,
    check_list_of_floats,
    check_matrix_of_floats,
    check_pure_python,
    expect_value_error,
    fail,
    raised,
)

# Pure-Python sums of a handful of products: agreement to 1e-9 relative is generous.
RTOL, ATOL = 1e-9, 1e-12
PROBE_SEED = 5  # the inputs of the standard-library run (uses_no_array_library)


def _matrix(rng: random.Random, rows: int, cols: int, scale: float = 1.0) -> list[list[float]]:
    return [[rng.gauss(0.0, scale) for _ in range(cols)] for _ in range(rows)]




def softmax_matches_reference(softmax: Callable, seed: int = 1) -> None:
    """softmax of random rows (lengths 1 to 12) equals the reference."""
    rng = random.Random(seed)
    for T in list(range(1, 13)) + [3, 7]:
        row = [rng.uniform(-6.0, 6.0) for _ in range(T)]
        arg = list(row)
        got = _call(softmax, arg, what=f"softmax of a random row of length {T}")
        # (A learner's function called through the checker changes only the kernel's copy,
        # which the kernel reports: changed_inputs.)
        if arg != row or got is arg or getattr(softmax, "changed_inputs", None):
            fail(f"softmax of a row of length {T} changed the list it was given: return a "
                 "new list and leave the scores as they were")
        check_list_of_floats(got, T, f"softmax of a row of length {T}")
        if abs(sum(got) - 1.0) > 1e-9:
            fail(f"softmax of a random row of length {T}: the weights do not sum to 1")
        assert_close(got, ref.softmax(row), f"softmax of a random row of length {T}",
                     rtol=RTOL, atol=ATOL)


def softmax_is_stable(softmax: Callable) -> None:
    """softmax of very large or very negative scores neither overflows nor underflows to 0/0."""
    rows = [
        [1000.0, 1001.0],
        [-1000.0, -1001.0, -999.0],
        [710.0, 0.0, -710.0],
        [0.0, 1000.0],
        [-710.0, 0.0, 710.0],
        [1e4, 1e4 - 1.0, 1e4 - 2.0],
        [-2e4, -2e4],
        [800.0],
    ]
    for row in rows:
        what = f"softmax of scores of magnitude {max(abs(x) for x in row):g}"
        got = _call(softmax, list(row), what=what, hint=exception_hint)
        check_list_of_floats(got, len(row), what)
        with explain(lambda: softmax_hint(got)):
            assert_close(got, ref.softmax(row), what, rtol=RTOL, atol=ATOL)


def softmax_rejects_empty(softmax: Callable) -> None:
    """softmax([]) raises ValueError."""
    expect_value_error(softmax, ([],), "softmax([])")


def attention_matches_reference(attention: Callable, seed: int = 2) -> None:
    """Attention of random square inputs (T_q == T_k) equals the reference."""
    rng = random.Random(seed)
    for T, d_k, d_v in [(1, 1, 1), (2, 3, 2), (4, 4, 4), (5, 8, 3), (6, 2, 7), (3, 16, 1)]:
        Q, K, V = _matrix(rng, T, d_k), _matrix(rng, T, d_k), _matrix(rng, T, d_v)
        what = f"attention with T = {T}, d_k = {d_k}, d_v = {d_v}"
        got = _call(attention, Q, K, V, what=what)
        check_matrix_of_floats(got, T, d_v, what)
        with explain(lambda: attention_hint(got, Q, K, V)):
            assert_close(got, ref.scaled_dot_product_attention(Q, K, V), what, rtol=RTOL,
                         atol=ATOL)


def attention_rectangular(attention: Callable, seed: int = 3) -> None:
    """Attention with T_q != T_k (more or fewer queries than keys) equals the reference."""
    rng = random.Random(seed)
    for T_q, T_k, d_k, d_v in [(1, 5, 4, 2), (5, 1, 3, 3), (2, 7, 2, 5), (6, 3, 8, 1)]:
        Q, K, V = _matrix(rng, T_q, d_k), _matrix(rng, T_k, d_k), _matrix(rng, T_k, d_v)
        what = f"attention with T_q = {T_q}, T_k = {T_k}, d_k = {d_k}, d_v = {d_v}"
        got = _call(attention, Q, K, V, what=what)
        check_matrix_of_floats(got, T_q, d_v, what)
        with explain(lambda: attention_hint(got, Q, K, V)):
            assert_close(got, ref.scaled_dot_product_attention(Q, K, V), what, rtol=RTOL,
                         atol=ATOL)


def attention_is_stable(attention: Callable, seed: int = 4) -> None:
    """Attention whose scores are all near +-1000 gives finite, correct outputs.

    Every score gets the same large offset (from a shared first coordinate) plus an O(1)
    part, so the weights are far from one-hot: a naive exp overflows (or underflows to
    0/0), while a correct softmax is unaffected by the offset. In the last cases the first
    key scores -offset, a spread of thousands that only subtracting the maximum survives
    (not the first score, the minimum or the mean).
    """
    rng = random.Random(seed)
    cases = [(3, 4, 4, 1000.0, False), (2, 5, 9, -1000.0, False), (4, 3, 16, 1000.0, True),
             (3, 2, 4, 1000.0, True)]
    for T_q, T_k, d_k, offset, far_key in cases:
        big = (abs(offset) * d_k ** 0.5) ** 0.5
        Q = [[big] + row for row in _matrix(rng, T_q, d_k - 1)]
        K = [[big if offset > 0 else -big] + row for row in _matrix(rng, T_k, d_k - 1)]
        if far_key:
            K[0][0] = -K[0][0]
        V = _matrix(rng, T_k, 3)
        what = f"attention with every score near {offset:g}"
        got = _call(attention, Q, K, V, what=what, hint=exception_hint)
        check_matrix_of_floats(got, T_q, 3, what)
        with explain(lambda: attention_hint(got, Q, K, V)):
            assert_close(got, ref.scaled_dot_product_attention(Q, K, V), what, rtol=1e-6,
                         atol=1e-8)


def attention_rejects_bad_input(attention: Callable) -> None:
    """Empty, ragged or mismatched Q, K, V raise ValueError."""
    ok = [[1.0, 0.0], [0.0, 1.0]]
    cases = {
        "empty Q": ([], ok, ok),
        "Q with an empty row": ([[]], ok, ok),
        "ragged Q": ([[1.0, 0.0], [1.0]], ok, ok),
        "ragged K": (ok, [[1.0, 0.0], [1.0, 2.0, 3.0]], ok),
        "ragged V": (ok, ok, [[1.0], [1.0, 2.0]]),
        "V with empty rows": (ok, ok, [[], []]),
        "Q and K of different widths d_k": ([[1.0, 2.0, 3.0]], ok, ok),
        "K and V with different numbers of rows T_k": (ok, ok, [[1.0, 2.0]]),
    }
    for what, args in cases.items():
        expect_value_error(attention, args, f"attention with {what}")


def _probe_calls(seed: int) -> list[tuple[str, tuple]]:
    """The calls :func:`uses_no_array_library` makes in the standard-library Python, under
    the names the released notebook gives the functions: softmax of a row of 5, attention
    of 3 queries over 4 keys."""
    rng = random.Random(seed)
    row = [rng.uniform(-3.0, 3.0) for _ in range(5)]
    Q, K, V = _matrix(rng, 3, 4), _matrix(rng, 4, 4), _matrix(rng, 4, 2)
    return [("softmax", (row,)), ("scaled_dot_product_attention", (Q, K, V))]


# The calls uses_no_array_library makes in the standard-library probe (autograder.probe):
# ``check`` starts that run from the notebook's source while the kernel boots
# (autograder.notebook_run), and the test takes it.
PROBE_CALLS = _probe_calls(PROBE_SEED)


def uses_no_array_library(softmax: Callable, attention: Callable,
                          seed: int = PROBE_SEED) -> None:
    """Both functions work and neither (nor a helper it calls) uses an array library.

    Graded by the checker (``softmax`` a :class:`autograder.remote.Remote`): the
    setup and solution cells run again in a Python with the standard library only
    (:mod:`autograder.probe`), where both functions must give what they give in the kernel.
    Called with the functions themselves (the course's own tests): their code is read for
    array libraries (:func:`autograder.testing.check_pure_python`).
    """
    _call(softmax, [0.0, 1.0], what="softmax([0, 1])")
    _call(attention, [[1.0]], [[1.0]], [[1.0]], what="attention of 1 x 1 matrices")
    if not isinstance(softmax, Remote):
        check_pure_python(softmax, attention)
        return
    (_, (row,)), (_, (Q, K, V)) = _probe_calls(seed)
    # Compared with what the same calls give in the kernel (a wrong result is the other
    # tests' business; this one checks only that no array library was needed).
    cases = [(softmax.bound_as or softmax.__name__, (row,), "softmax of a row of 5",
              _call(softmax, list(row), what="softmax of a row of 5")),
             (attention.bound_as or attention.__name__, (Q, K, V),
              "attention of 3 queries over 4 keys",
              _call(attention, Q, K, V, what="attention of 3 queries over 4 keys"))]
    got, tried = without_libraries(softmax._session, [(name, args) for name, args, _, _ in cases])
    if tried:
        fail(f"your cells import {tried[0]} (this exercise is pure Python: no numpy, torch or "
             "other array library, not even when one is installed)")
    for (_, _, what, expected), value in zip(cases, got):
        what = f"{what}, in a Python with the standard library only"
        if isinstance(value, BaseException):
            fail(f"{what}: raised {raised(value)} (this exercise is pure "
                 "Python: no numpy, torch or other array library)")
        assert_close(value, expected, what + " (compared with the kernel's)", rtol=1e-12,
                     atol=1e-15)


knowledge_check = _knowledge.check_for("ex01_python_attention", __name__)
