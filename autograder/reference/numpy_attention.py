"""Batched, masked scaled dot-product attention in NumPy (reference for ``ex02_numpy_attention``).

Implements equation (1) of Vaswani et al. (2017), "Attention Is All You Need":

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

on arrays with any number of leading batch dimensions, with the course's conventions
(the grading contract, `contract.md`): a boolean mask means **True = may attend** (as in
torch.nn.functional.scaled_dot_product_attention), a float mask is added to the scores, and
a query row with no key to attend to gets zero weights and a zero output, never NaN.
float32 inputs are computed and returned in float32, float64 inputs in float64.
"""

import numpy as np


def _float_array(name: str, x) -> np.ndarray:
    """``x`` as a floating array: float16/32/64 kept, integers and bools to float64."""
    a = np.asarray(x)
    if a.dtype.kind in "biu":
        return a.astype(np.float64)
    if a.dtype.kind != "f":
        raise ValueError(f"{name} must hold real numbers, got dtype {a.dtype}")
    return a


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis`` (Vaswani et al. 2017, eq. 1).

    softmax(s)_j = exp(s_j - m) / sum_j' exp(s_j' - m) with m the maximum along ``axis``:
    the shift cancels, and keeps every exponent <= 0. A slice whose entries are all
    ``-inf`` (nothing to attend to) gives zeros rather than NaN.

    Args:
        x: array of any shape with at least one dimension; float32 stays float32, float64
            stays float64, integers are converted to float64.
        axis: the axis to normalise over (negative values count from the end).

    Returns:
        An array of the shape and floating dtype of ``x`` whose slices along ``axis`` sum
        to 1 (or are all 0).

    Raises:
        ValueError: if ``x`` is 0-dimensional, not real, empty along ``axis``, or ``axis``
            is out of range.
    """
    x = _float_array("x", x)
    if x.ndim == 0:
        raise ValueError("softmax needs an array with at least one dimension, got a scalar")
    if not isinstance(axis, (int, np.integer)) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis = {axis!r} is out of range for an array of shape {x.shape}")
    if x.shape[axis] == 0:
        raise ValueError(f"softmax over an empty axis {axis} of shape {x.shape}")
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, np.zeros_like(m))  # all -inf slices: shift by 0
    e = np.exp(x - m)
    total = np.sum(e, axis=axis, keepdims=True)
    return e / np.where(total > 0, total, np.ones_like(total))


def causal_mask(T: int) -> np.ndarray:
    """The causal (look-ahead) mask of Vaswani et al. (2017), section 3.2.3.

    Args:
        T: sequence length, a positive integer.

    Returns:
        A (T, T) boolean array, True on and below the diagonal: query i may attend to keys
        0..i and never to a later position.

    Raises:
        ValueError: if ``T`` is not a positive integer.
    """
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 1:
        raise ValueError(f"T must be a positive integer, got {T!r}")
    return np.tril(np.ones((T, T), dtype=bool))


def scaled_dot_product_attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Batched scaled dot-product attention with an optional mask (Vaswani et al. 2017, eq. 1).

    Args:
        Q: queries (..., T_q, d_k).
        K: keys (..., T_k, d_k).
        V: values (..., T_k, d_v). The leading batch dimensions of Q, K and V broadcast.
        mask: optional, broadcastable to (..., T_q, T_k). Boolean: True = query i may attend
            to key j. Floating: added to the scores (``-inf`` forbids a key).

    Returns:
        ``(output, weights)``: output (..., T_q, d_v) and weights (..., T_q, T_k), in float32
        when every input is float32 and float64 otherwise (float64 inputs give float64). Each
        row of weights sums to 1, except rows whose query may attend to no key: their weights
        and output are 0.

    Raises:
        ValueError: if an input has fewer than 2 dimensions, if Q and K have different d_k,
            if K and V have different T_k, if the batch dimensions do not broadcast, or if
            ``mask`` is neither boolean nor floating or does not broadcast to the scores.
    """
    Q, K, V, batch = _checked_inputs(Q, K, V)
    d_k = Q.shape[-1]
    dtype = Q.dtype
    scores = (Q @ np.swapaxes(K, -1, -2)) / dtype.type(np.sqrt(d_k))  # (..., T_q, T_k)
    if mask is not None:
        scores = _masked(scores, mask, batch)
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


def _checked_inputs(Q, K, V) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...]]:
    """Q, K and V of :func:`scaled_dot_product_attention` as arrays of one floating dtype
    (float32 when all are float32, else float64) and their broadcast batch shape;
    ValueError naming the input and shape that do not fit."""
    Q, K, V = _float_array("Q", Q), _float_array("K", K), _float_array("V", V)
    for name, a in (("Q", Q), ("K", K), ("V", V)):
        if a.ndim < 2:
            raise ValueError(f"{name} must have shape (..., T, d), got {a.shape}")
    dtype = np.result_type(Q, K, V)
    if dtype != np.float32:
        dtype = np.dtype(np.float64)
    d_k, T_k = Q.shape[-1], K.shape[-2]
    if K.shape[-1] != d_k:
        raise ValueError(
            f"Q has d_k = {d_k} (shape {Q.shape}) but K has d_k = {K.shape[-1]} (shape {K.shape})"
        )
    if V.shape[-2] != T_k:
        raise ValueError(
            f"K has T_k = {T_k} rows (shape {K.shape}) but V has {V.shape[-2]} (shape {V.shape})"
        )
    try:
        batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except ValueError:
        raise ValueError(
            f"batch dimensions of Q {Q.shape}, K {K.shape} and V {V.shape} do not broadcast"
        ) from None
    Q, K, V = Q.astype(dtype, copy=False), K.astype(dtype, copy=False), V.astype(dtype, copy=False)
    return Q, K, V, batch


def _masked(scores: np.ndarray, mask, batch: tuple[int, ...]) -> np.ndarray:
    """``scores`` (..., T_q, T_k) with ``mask`` applied: a boolean mask's False entries
    become ``-inf`` (True = may attend), a floating mask is added. ValueError when ``mask``
    is neither or does not broadcast to the scores' shape."""
    mask = np.asarray(mask)
    if mask.dtype != bool and mask.dtype.kind != "f":
        raise ValueError(
            f"mask must be boolean (True = may attend) or floating, got dtype {mask.dtype}"
        )
    T_q, T_k = scores.shape[-2:]
    try:
        full = np.broadcast_shapes(mask.shape, (*batch, T_q, T_k))
    except ValueError:
        full = None
    if full is None or full[-2:] != (T_q, T_k):
        raise ValueError(
            f"mask of shape {mask.shape} does not broadcast to the scores' shape "
            f"{(*batch, T_q, T_k)}"
        )
    if mask.dtype == bool:
        return np.where(mask, scores, scores.dtype.type(-np.inf))
    return scores + mask.astype(scores.dtype)
