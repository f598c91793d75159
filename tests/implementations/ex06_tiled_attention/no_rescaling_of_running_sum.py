"""Wrong: rescales the accumulator but not the running sum l when the running maximum grows.

fails: test_worked_example, test_matches_dense, test_any_block_size, test_rectangular, test_causal, test_causal_rectangular, test_stable_large_scores, test_peak_memory, test_peak_memory_causal
hint: the running sum l (the normaliser) not rescaled when the running maximum grows
hint: got [[20.0, 2.0], [16.76816, 1.676816], [15.269803, 1.52698]]. Hint: your output matches tiled attention with the running sum l
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
    T_q, d_k = Q.shape
    T_k, d_v = V.shape
    m = np.full(T_q, -np.inf)
    l = np.zeros(T_q)
    acc = np.zeros((T_q, d_v))
    for start in range(0, T_k, block_size):
        stop = min(start + block_size, T_k)
        S = Q @ K[start:stop].T / np.sqrt(d_k)
        if is_causal:
            S = np.where(np.arange(T_q)[:, None] >= np.arange(start, stop), S, -np.inf)
        m_new = np.maximum(m, S.max(axis=1))
        safe = np.where(np.isfinite(m_new), m_new, 0.0)
        alpha = np.exp(m - safe)
        P = np.exp(S - safe[:, None])
        l = l + P.sum(axis=1)
        acc = alpha[:, None] * acc + P @ V[start:stop]
        m = m_new
    out = np.zeros((T_q, d_v))
    np.divide(acc, l[:, None], out=out, where=l[:, None] > 0)
    return out
