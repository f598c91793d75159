"""Tiled attention with the online softmax (reference for ``ex06_tiled_attention``).

Computes the same output as dense scaled dot-product attention (Vaswani et al. 2017, eq. 1),

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V,

but visits the keys in blocks of ``block_size`` and never holds the T_q x T_k matrix of
scores. Each query row keeps three running quantities over the blocks seen so far: the
maximum score m, the normaliser l = sum_j exp(s_j - m) and the accumulator
acc = sum_j exp(s_j - m) v_j. When a new block raises the maximum from m to m', the old
sums are rescaled by exp(m - m') (the online softmax of Milakov & Gimelshein 2018; its use
for attention is Rabe & Staats 2021 and, fused on a GPU, FlashAttention, Dao et al. 2022).
The output is acc / l.

The largest temporaries are (T_q, block_size) arrays, with the scaled copy of Q (T_q, d_k)
and the accumulator (T_q, d_v), so the memory is O(T_q (block_size + d_k + d_v)) instead of
O(T_q T_k).
"""

from __future__ import annotations

import numbers

import numpy as np


def _as_matrix(name: str, x) -> np.ndarray:
    """``x`` as a 2-D floating array; ValueError naming ``name`` otherwise."""
    try:
        a = np.asarray(x)
    except Exception as exc:  # noqa: BLE001 - anything np.asarray refuses
        raise ValueError(f"{name} could not be read as an array: {exc}") from None
    if a.dtype == np.bool_ or not (np.issubdtype(a.dtype, np.floating)
                                   or np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"{name} must hold real numbers, got dtype {a.dtype}")
    if a.ndim != 2:
        raise ValueError(f"{name} must be a matrix (2-D), got shape {a.shape}")
    return a


def tiled_attention(Q, K, V, block_size: int = 64, is_causal: bool = False) -> np.ndarray:
    """softmax(Q K^T / sqrt(d_k)) V computed over key blocks with the online softmax.

    Args:
        Q: queries, (T_q, d_k), float or integer array (integers are computed in float64).
        K: keys, (T_k, d_k).
        V: values, (T_k, d_v).
        block_size: number of keys per block, an integer >= 1 (larger than T_k means one
            block). The last block holds the keys that remain, fewer than block_size
            when block_size does not divide T_k.
        is_causal: if True, query i attends to keys j <= i only (top-left aligned, as
            ``torch.nn.functional.scaled_dot_product_attention``: the lower triangle of a
            T_q x T_k matrix of ones, also when T_q != T_k).

    Returns:
        The output, (T_q, d_v), in the floating dtype of the inputs (``np.result_type`` of
        Q, K and V; float64 for integer inputs). A query with no key to attend to (T_k = 0) gets a
        zero row, never NaN.

    Raises:
        ValueError: if an input is not a real 2-D array, if Q and K have different d_k, if
            K and V have different T_k, if d_k = 0, if ``block_size`` is not an integer >= 1
            or if ``is_causal`` is not a bool.

    Memory: the temporaries are (T_q, block_size) arrays; nothing of size T_q x T_k (no
    score matrix, no mask) is allocated.
    """
    Q, K, V = _checked_inputs(Q, K, V, block_size, is_causal)
    dtype = Q.dtype
    T_q, d_k = Q.shape
    T_k, d_v = V.shape
    block_size = int(block_size)
    scale = dtype.type(1.0 / np.sqrt(d_k))
    Qs = Q * scale  # scaling Q once costs T_q d_k instead of T_q T_k multiplications

    m = np.full(T_q, -np.inf, dtype=dtype)  # running maximum of each row's scores
    l = np.zeros(T_q, dtype=dtype)  # running normaliser sum_j exp(s_j - m)
    acc = np.zeros((T_q, d_v), dtype=dtype)  # running sum_j exp(s_j - m) v_j
    rows = np.arange(T_q)[:, None]  # (T_q, 1) query positions, for the causal mask

    # With is_causal, keys j >= T_q are visible to no query: stop there.
    end = min(T_k, T_q) if is_causal else T_k
    for start in range(0, end, block_size):
        stop = min(start + block_size, T_k)
        scores = Qs @ K[start:stop].T  # (T_q, block): this block's columns of S
        if is_causal:
            # query i may see key j <= i; the block's keys are start .. stop - 1
            scores[rows < np.arange(start, stop)] = -np.inf
        m_new = np.maximum(m, scores.max(axis=1))
        # A row that has seen only masked scores so far keeps m = -inf; subtract 0 there so
        # that exp(-inf - (-inf)) = NaN never happens (its exp terms are all exp(-inf) = 0).
        shift = np.where(np.isfinite(m_new), m_new, 0.0)
        alpha = np.exp(m - shift)  # exp(m - m'): rescales the old sums; 0 when m = -inf
        # (T_q, block) terms exp(s_j - m'), not yet normalised, written over the scores: no
        # temporary (T_q, block) array
        np.subtract(scores, shift[:, None], out=scores)
        terms = np.exp(scores, out=scores)
        l = alpha * l + terms.sum(axis=1)
        acc *= alpha[:, None]
        acc += terms @ V[start:stop]
        m = m_new

    out = np.zeros_like(acc)
    np.divide(acc, l[:, None], out=out, where=l[:, None] > 0)  # rows with no key stay 0
    return out


def _checked_inputs(Q, K, V, block_size, is_causal) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The checks of :func:`tiled_attention`'s arguments (its Raises says which); returns Q,
    K and V as arrays of their floating result type (float64 for integers)."""
    Q, K, V = _as_matrix("Q", Q), _as_matrix("K", K), _as_matrix("V", V)
    if Q.shape[1] != K.shape[1]:
        raise ValueError(f"Q has d_k = {Q.shape[1]} (shape {Q.shape}) but K has d_k = "
                         f"{K.shape[1]} (shape {K.shape})")
    if K.shape[0] != V.shape[0]:
        raise ValueError(f"K has T_k = {K.shape[0]} rows (shape {K.shape}) but V has "
                         f"{V.shape[0]} (shape {V.shape})")
    if Q.shape[1] == 0:
        raise ValueError(f"d_k must be at least 1, got Q of shape {Q.shape}")
    if isinstance(block_size, bool) or not isinstance(block_size, numbers.Integral) \
            or block_size < 1:
        raise ValueError(f"block_size must be an integer >= 1, got {block_size!r}")
    if not isinstance(is_causal, (bool, np.bool_)):
        raise ValueError(f"is_causal must be True or False, got {is_causal!r}")
    dtype = np.result_type(Q, K, V)
    if not np.issubdtype(dtype, np.floating):
        dtype = np.dtype(np.float64)  # integer inputs
    Q, K, V = Q.astype(dtype, copy=False), K.astype(dtype, copy=False), V.astype(dtype, copy=False)
    return Q, K, V
