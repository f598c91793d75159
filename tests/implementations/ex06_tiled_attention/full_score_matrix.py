"""Wrong: computes the whole T_q x T_k score matrix first and only then walks over its blocks.

fails: test_peak_memory, test_peak_memory_causal
"""
# %% tiled_attention
import numpy as np


def tiled_attention(Q, K, V, block_size=64, is_causal=False):
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    if Q.ndim != 2 or K.ndim != 2 or V.ndim != 2:
        raise ValueError(f"Q, K, V must be 2-D, got {Q.shape}, {K.shape}, {V.shape}")
    if Q.shape[1] != K.shape[1] or K.shape[0] != V.shape[0]:
        raise ValueError(f"shapes do not match: Q {Q.shape}, K {K.shape}, V {V.shape}")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    T_q, T_k = Q.shape[0], K.shape[0]
    S_all = Q @ K.T / np.sqrt(Q.shape[1])  # (T_q, T_k): exactly what tiling should avoid
    if is_causal:
        S_all[np.arange(T_q)[:, None] < np.arange(T_k)] = -np.inf
    m = np.full(T_q, -np.inf)
    l = np.zeros(T_q)
    acc = np.zeros((T_q, V.shape[1]))
    for start in range(0, T_k, block_size):
        S = S_all[:, start:start + block_size]
        m_new = np.maximum(m, S.max(axis=1))
        safe = np.where(np.isfinite(m_new), m_new, 0.0)
        alpha = np.exp(m - safe)
        P = np.exp(S - safe[:, None])
        l = alpha * l + P.sum(axis=1)
        acc = alpha[:, None] * acc + P @ V[start:start + block_size]
        m = m_new
    out = np.zeros_like(acc)
    np.divide(acc, l[:, None], out=out, where=l[:, None] > 0)
    return out
