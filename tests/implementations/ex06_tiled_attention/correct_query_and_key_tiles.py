"""Correct alternative: FlashAttention-2 loop order, query tiles outside and key tiles inside.

Each (query tile, key tile) pair is a block_size x block_size problem; the running output is
kept normalised, and a causal query tile stops at the last key it can see.

fails: none
"""
# %% tiled_attention
import math

import numpy as np


def tiled_attention(Q, K, V, block_size=64, is_causal=False):
    Q, K, V = np.asarray(Q, dtype=float), np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    if Q.ndim != 2 or K.ndim != 2 or V.ndim != 2:
        raise ValueError(f"Q, K and V must be matrices, got shapes {Q.shape}, {K.shape}, {V.shape}")
    if Q.shape[1] != K.shape[1]:
        raise ValueError(f"d_k differs: Q is {Q.shape}, K is {K.shape}")
    if K.shape[0] != V.shape[0]:
        raise ValueError(f"T_k differs: K is {K.shape}, V is {V.shape}")
    if int(block_size) != block_size or block_size <= 0:
        raise ValueError(f"block_size = {block_size} is not a positive integer")
    T_q, T_k, b = Q.shape[0], K.shape[0], int(block_size)
    out = np.zeros((T_q, V.shape[1]))
    scale = 1.0 / math.sqrt(Q.shape[1])
    for q0 in range(0, T_q, b):
        q1 = min(q0 + b, T_q)
        q = Q[q0:q1] * scale
        m = np.full(q1 - q0, -np.inf)
        l = np.zeros(q1 - q0)
        o = np.zeros((q1 - q0, V.shape[1]))
        k_end = min(T_k, q1) if is_causal else T_k
        for k0 in range(0, k_end, b):
            k1 = min(k0 + b, T_k)
            s = q @ K[k0:k1].T
            if is_causal and k1 - 1 > q0:  # this tile crosses the diagonal
                s[np.arange(q0, q1)[:, None] < np.arange(k0, k1)[None, :]] = -np.inf
            m_new = np.maximum(m, s.max(axis=1))
            ok = np.isfinite(m_new)
            ref = np.where(ok, m_new, 0.0)
            p = np.exp(s - ref[:, None])
            corr = np.exp(m - ref)
            l_new = corr * l + p.sum(axis=1)
            safe_l = np.where(l_new > 0, l_new, 1.0)
            # o stays normalised: o = sum_j p_j v_j / l after every tile
            o = ((corr * l)[:, None] * o + p @ V[k0:k1]) / safe_l[:, None]
            m, l = m_new, l_new
        out[q0:q1] = o
    return out
