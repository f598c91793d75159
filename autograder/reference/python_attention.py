"""Scaled dot-product attention in pure Python (reference for ``ex01_python_attention``).

Implements equation (1) of Vaswani et al. (2017), "Attention Is All You Need":

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

on lists of lists of numbers, with no NumPy and no torch, so every multiplication is visible.
"""

import math

Matrix = list[list[float]]


def softmax(row: list[float]) -> list[float]:
    """Numerically stable softmax of one row of scores.

    softmax(s)_j = exp(s_j - m) / sum_j' exp(s_j' - m) with m = max(s): subtracting the
    maximum leaves the result unchanged and keeps every exponent <= 0, so scores such as
    [1000, 1001] do not overflow.

    Args:
        row: a non-empty list of real numbers (int or float), length T.

    Returns:
        A new list of T Python floats in [0, 1] that sum to 1. In exact arithmetic every
        weight is positive; in floating point a weight far below the largest underflows to
        0.0 (softmax([-745, 710]) is [0.0, 1.0]).

    Raises:
        ValueError: if ``row`` is empty or holds a value that is not a finite number.
    """
    if len(row) == 0:
        raise ValueError("softmax needs at least one score, got an empty row")
    for j, x in enumerate(row):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise ValueError(f"softmax needs finite numbers, got row[{j}] = {x!r}")
    m = max(row)
    exps = [math.exp(x - m) for x in row]
    total = math.fsum(exps)
    return [e / total for e in exps]


def _shape(name: str, M: Matrix) -> tuple[int, int]:
    """Return (rows, columns) of a list of lists; ValueError if empty or ragged."""
    if not isinstance(M, (list, tuple)) or len(M) == 0:
        raise ValueError(f"{name} must be a non-empty list of rows, got {M!r}")
    cols = None
    for i, r in enumerate(M):
        if not isinstance(r, (list, tuple)) or len(r) == 0:
            raise ValueError(f"{name}[{i}] must be a non-empty list of numbers, got {r!r}")
        if cols is None:
            cols = len(r)
        elif len(r) != cols:
            raise ValueError(
                f"{name} is ragged: row 0 has {cols} entries but row {i} has {len(r)}"
            )
    return len(M), cols


def scaled_dot_product_attention(Q: Matrix, K: Matrix, V: Matrix) -> Matrix:
    """Scaled dot-product attention on lists of lists (Vaswani et al. 2017, eq. 1).

    Args:
        Q: queries, T_q rows of d_k numbers.
        K: keys, T_k rows of d_k numbers.
        V: values, T_k rows of d_v numbers. T_q may differ from T_k.

    Returns:
        The output, T_q rows of d_v Python floats: row i is the average of the rows of V
        weighted by softmax_j(Q[i] . K[j] / sqrt(d_k)).

    Raises:
        ValueError: if a matrix is empty or ragged, if Q and K have different widths d_k,
            or if K and V have different numbers of rows T_k.
    """
    T_q, d_k = _shape("Q", Q)
    T_k, d_k_keys = _shape("K", K)
    T_v, d_v = _shape("V", V)
    if d_k != d_k_keys:
        raise ValueError(f"Q has d_k = {d_k} columns but K has {d_k_keys}")
    if T_v != T_k:
        raise ValueError(f"K has T_k = {T_k} rows but V has {T_v}")
    scale = 1.0 / math.sqrt(d_k)
    out = []
    for q in Q:
        scores = [math.fsum(q[c] * k[c] for c in range(d_k)) * scale for k in K]
        weights = softmax(scores)
        out.append([math.fsum(weights[j] * V[j][c] for j in range(T_k)) for c in range(d_v)])
    return out
