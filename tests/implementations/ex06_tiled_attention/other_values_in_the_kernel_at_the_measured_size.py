"""Wrong, and made to cheat the peak memory tests the other way round: honest tiled
attention where it is measured (outside the kernel), other values in the kernel at the
measured size. The measured call must return what the kernel returns for the same inputs
(the kernel's call is compared with the probe's), so both peak memory tests fail; every
other test, at smaller sizes, passes.

fails: test_peak_memory, test_peak_memory_causal
"""
# %% tiled_attention
import sys

import numpy as np


def _tiled(Q, K, V, block_size: int = 64, is_causal: bool = False) -> np.ndarray:
    """softmax(Q K^T / sqrt(d_k)) V over key blocks with the online softmax.

    Q: (T_q, d_k), K: (T_k, d_k), V: (T_k, d_v) -> (T_q, d_v). Never holds a T_q x T_k array.
    is_causal: query i attends to keys j <= i (top-left aligned).
    Raises ValueError for mismatched or non-2-D shapes and block_size < 1.
    """
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    for name, x in (("Q", Q), ("K", K), ("V", V)):
        if x.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {x.shape}")
    if Q.shape[1] != K.shape[1]:
        raise ValueError(f"Q has d_k = {Q.shape[1]} but K has d_k = {K.shape[1]}")
    if K.shape[0] != V.shape[0]:
        raise ValueError(f"K has T_k = {K.shape[0]} rows but V has {V.shape[0]}")
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    T_q, d_k = Q.shape
    T_k, d_v = V.shape
    Qs = Q / np.sqrt(d_k)
    m = np.full(T_q, -np.inf)  # running maximum
    l = np.zeros(T_q)  # running normaliser
    acc = np.zeros((T_q, d_v))  # running accumulator
    rows = np.arange(T_q)[:, None]
    end = min(T_k, T_q) if is_causal else T_k  # keys j >= T_q are seen by no query
    for start in range(0, end, block_size):
        stop = min(start + block_size, T_k)
        S = Qs @ K[start:stop].T  # (T_q, b)
        if is_causal:
            S[rows < np.arange(start, stop)] = -np.inf
        m_new = np.maximum(m, S.max(axis=1))
        shift = np.where(np.isfinite(m_new), m_new, 0.0)  # no -inf - (-inf)
        alpha = np.exp(m - shift)
        P = np.exp(S - shift[:, None])
        l = alpha * l + P.sum(axis=1)
        acc = alpha[:, None] * acc + P @ V[start:stop]
        m = m_new
    out = np.zeros((T_q, d_v))
    np.divide(acc, l[:, None], out=out, where=l[:, None] > 0)
    return out


def tiled_attention(Q, K, V, block_size: int = 64, is_causal: bool = False):
    out = _tiled(Q, K, V, block_size, is_causal)
    if "ipykernel" in sys.modules and len(Q) >= 4096:
        return out[::-1].copy()
    return out
