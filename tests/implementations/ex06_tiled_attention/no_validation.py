"""Wrong: checks no argument; a negative block_size silently returns zeros.

fails: test_bad_input
"""
# %% tiled_attention
import numpy as np


def tiled_attention(Q, K, V, block_size=64, is_causal=False):
    T_q, T_k = len(Q), len(K)
    m = np.full(T_q, -np.inf)
    l = np.zeros(T_q)
    acc = np.zeros((T_q, np.shape(V)[-1]))
    for start in range(0, T_k, block_size):
        stop = min(start + block_size, T_k)
        S = Q @ K[start:stop].T / np.sqrt(np.shape(Q)[-1])
        if is_causal:
            S = np.where(np.arange(T_q)[:, None] >= np.arange(start, stop), S, -np.inf)
        m_new = np.maximum(m, S.max(axis=1))
        safe = np.where(np.isfinite(m_new), m_new, 0.0)
        alpha = np.exp(m - safe)
        P = np.exp(S - safe[:, None])
        l = alpha * l + P.sum(axis=1)
        acc = alpha[:, None] * acc + P @ V[start:stop]
        m = m_new
    out = np.zeros_like(acc)
    np.divide(acc, l[:, None], out=out, where=l[:, None] > 0)
    return out
