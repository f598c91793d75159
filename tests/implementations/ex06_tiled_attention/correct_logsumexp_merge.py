"""Correct alternative: each key block's own softmax, merged with the running log-sum-exp.

Block B gives its normalised output o_B and log-sum-exp L_B; two partial results merge as
o = exp(L - L') o + exp(L_B - L') o_B with L' = logaddexp(L, L_B).

fails: none
"""
# %% tiled_attention
import numpy as np


def tiled_attention(Q, K, V, block_size=64, is_causal=False):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    if Q.ndim != 2:
        raise ValueError(f"Q must have shape (T_q, d_k), got {Q.shape}")
    if K.ndim != 2 or K.shape[1] != Q.shape[1]:
        raise ValueError(f"K must have shape (T_k, {Q.shape[1]}), got {K.shape}")
    if V.ndim != 2 or V.shape[0] != K.shape[0]:
        raise ValueError(f"V must have shape ({K.shape[0]}, d_v), got {V.shape}")
    if not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    T_q, T_k = Q.shape[0], K.shape[0]
    lse = np.full((T_q, 1), -np.inf)
    o = np.zeros((T_q, V.shape[1]))
    q_pos = np.arange(T_q)[:, None]
    for start in range(0, T_k, block_size):
        Kb, Vb = K[start:start + block_size], V[start:start + block_size]
        S = (Q @ Kb.T) / np.sqrt(Q.shape[1])
        if is_causal:
            S = np.where(q_pos >= np.arange(start, start + len(Kb))[None, :], S, -np.inf)
        m_b = S.max(axis=1, keepdims=True)
        m_b = np.where(np.isneginf(m_b), 0.0, m_b)
        e = np.exp(S - m_b)
        sum_b = e.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            lse_b = m_b + np.log(sum_b)  # -inf where the whole block is masked
        o_b = (e / np.where(sum_b > 0, sum_b, 1.0)) @ Vb
        new = np.logaddexp(lse, lse_b)
        seen = np.isfinite(new)
        w_old = np.where(seen, np.exp(lse - np.where(seen, new, 0.0)), 0.0)
        w_b = np.where(seen, np.exp(lse_b - np.where(seen, new, 0.0)), 0.0)
        o = w_old * o + w_b * o_b
        lse = new
    return o
