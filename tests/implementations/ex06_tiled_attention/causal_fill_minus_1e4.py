"""Wrong: masked scores are filled with -1e4 instead of -inf; when real scores are below
-1e4 the masked (future) keys get all the weight.

fails: test_stable_large_scores
"""
# %% tiled_attention
import numpy as np


def tiled_attention(Q, K, V, block_size=64, is_causal=False):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    if Q.ndim != 2 or K.ndim != 2 or V.ndim != 2:
        raise ValueError(f"Q, K, V must be 2-D, got {Q.shape}, {K.shape}, {V.shape}")
    if Q.shape[1] != K.shape[1] or K.shape[0] != V.shape[0]:
        raise ValueError(f"shapes do not match: Q {Q.shape}, K {K.shape}, V {V.shape}")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    T_q, d = Q.shape
    T_k, d_v = V.shape
    m = np.full(T_q, -np.inf)
    l = np.zeros(T_q)
    acc = np.zeros((T_q, d_v))
    rows = np.arange(T_q)[:, None]
    for start in range(0, T_k, block_size):
        stop = min(start + block_size, T_k)
        S = Q @ K[start:stop].T / np.sqrt(d)
        if is_causal:
            S = np.where(rows >= np.arange(start, stop), S, -1e4)  # "a very negative number"
        m_new = np.maximum(m, S.max(axis=1))
        alpha = np.exp(m - m_new)
        P = np.exp(S - m_new[:, None])
        l = alpha * l + P.sum(axis=1)
        acc = alpha[:, None] * acc + P @ V[start:stop]
        m = m_new
    out = np.zeros((T_q, d_v))
    np.divide(acc, l[:, None], out=out, where=l[:, None] > 0)
    return out
