"""Name the common mistake behind a wrong pure-Python softmax or attention (exercises 1
and 8), with the standard library only, so the website's in-page check names it too.

:func:`attention_hint` takes the learner's output and the inputs that produced it, tries
the usual mistakes of these exercises (no mask, one sequence, row-major lists of lists)
and returns a sentence naming the one the output matches, '' when none does.
:func:`softmax_hint` and :func:`exception_hint` explain the NaN weights and the errors
of a softmax without its maximum subtracted. Nothing here reveals an expected value. The NumPy and torch exercises have
:mod:`autograder.diagnose`.
"""

from __future__ import annotations

import math
from typing import Callable

from autograder.reference.python_attention import softmax

Matrix = list[list[float]]

SUBTRACT_MAX = ("subtract the row's maximum score from every score before exp (not its "
                "first score, minimum or mean, nor 0): softmax is unchanged by the shift, "
                "and every exponent is then at most 0")


def exception_hint(exc: BaseException) -> str:
    """Why a softmax (or an attention calling one) raised ``exc``, when the reason is the
    missing max subtraction: exp overflowing, or every exp underflowing so that the sum is
    0; '' for any other error."""
    if isinstance(exc, OverflowError):
        return f"exp of a large score overflows: {SUBTRACT_MAX}"
    if isinstance(exc, ZeroDivisionError):
        return ("dividing by a sum of 0: exp of very negative scores underflows to 0; "
                + SUBTRACT_MAX)
    return ""


def softmax_hint(got: list[float]) -> str:
    """Why a softmax's weights ``got`` are wrong, when it shows: NaN or infinite weights
    (the maximum not subtracted, or the wrong shift); '' otherwise."""
    try:
        weights = [float(x) for x in got]
    except (TypeError, ValueError):
        return ""
    if any(math.isnan(x) or math.isinf(x) for x in weights):
        return f"some weights are NaN or infinite: {SUBTRACT_MAX}"
    return ""


def _attend(Q: Matrix, K: Matrix, V: Matrix, scale: float, over_queries: bool) -> Matrix:
    S = [[scale * sum(q * k for q, k in zip(qi, kj)) for kj in K] for qi in Q]
    if over_queries:  # each key's column of weights sums to 1 instead of each query's row
        cols = [softmax([S[i][j] for i in range(len(Q))]) for j in range(len(K))]
        W = [[cols[j][i] for j in range(len(K))] for i in range(len(Q))]
    else:
        W = [softmax(row) for row in S]
    return [[sum(W[i][j] * V[j][c] for j in range(len(K))) for c in range(len(V[0]))]
            for i in range(len(Q))]


def _matches(got: Matrix, candidate: Matrix, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    return len(got) == len(candidate) and all(
        len(g) == len(c) and all(abs(x - y) <= atol + rtol * abs(y) for x, y in zip(g, c))
        for g, c in zip(got, candidate))


def attention_hint(got: Matrix, Q: Matrix, K: Matrix, V: Matrix) -> str:
    """Which usual mistake the attention output ``got`` (T_q x d_v) matches, for Q (T_q x
    d_k), K (T_k x d_k) and V (T_k x d_v) given as lists of rows of floats.

    Tries: no scale, scores divided by d_k, the scale 1/sqrt(d_v) (when d_v != d_k), the
    softmax over the queries instead of the keys (with T_q = 1 every weight is then 1);
    then names NaN or infinite
    entries (the max not subtracted). Returns '' when none matches or ``got`` is not a
    matrix of numbers.
    """
    try:
        rows = [[float(x) for x in row] for row in got]
    except (TypeError, ValueError):
        return ""
    d_k, d_v = len(Q[0]), len(V[0])
    candidates: list[tuple[Callable[[], Matrix], str]] = [
        (lambda: _attend(Q, K, V, 1.0, False), "without the 1/sqrt(d_k) scale"),
        (lambda: _attend(Q, K, V, 1.0 / d_k, False),
         "with the scores divided by d_k instead of sqrt(d_k)"),
    ]
    if d_v != d_k:
        candidates.append((lambda: _attend(Q, K, V, 1.0 / math.sqrt(d_v), False),
                           "with the scale 1/sqrt(d_v) instead of 1/sqrt(d_k): d_k is the "
                           "width of the queries and keys, len(Q[0]), not of the values"))
    # With one query each column's softmax is over that query alone: a weight of 1 for
    # every key, so the output is the sum of the values.
    one = (": with one query every weight is then 1 and the output is the sum of the "
           "values") if len(Q) == 1 else ""
    candidates.append((lambda: _attend(Q, K, V, 1.0 / math.sqrt(d_k), True),
                       "with each softmax taken over the queries (a column of scores) "
                       f"instead of over the keys (a query's row of scores){one}"))
    for make, words in candidates:
        try:
            if _matches(rows, make()):
                return f"your output matches attention {words}"
        except (OverflowError, ZeroDivisionError, ValueError):
            continue
    if any(math.isnan(x) or math.isinf(x) for row in rows for x in row):
        return f"the output has NaN or infinite entries: {SUBTRACT_MAX}"
    return ""
