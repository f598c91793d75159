"""Wrong: "tiles" the keys, but first converts to torch and computes the dense T_q x T_k
scores (and mask) there, where tracemalloc sees nothing; only the whole process's memory
shows the 128 MiB score matrix.

fails: test_peak_memory, test_peak_memory_causal
"""
# %% tiled_attention
import numpy as np
import torch


def tiled_attention(Q, K, V, block_size=64, is_causal=False):
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    if Q.ndim != 2 or K.ndim != 2 or V.ndim != 2:
        raise ValueError(f"Q, K, V must be 2-D, got {Q.shape}, {K.shape}, {V.shape}")
    if Q.shape[1] != K.shape[1] or K.shape[0] != V.shape[0]:
        raise ValueError(f"shapes do not match: Q {Q.shape}, K {K.shape}, V {V.shape}")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    T_q, T_k = Q.shape[0], K.shape[0]
    q, k, v = torch.from_numpy(Q), torch.from_numpy(K), torch.from_numpy(V)
    S = q @ k.T / np.sqrt(Q.shape[1])  # (T_q, T_k) in torch: invisible to tracemalloc
    if is_causal:
        S = S.masked_fill(~torch.ones(T_q, T_k, dtype=torch.bool).tril(), float("-inf"))
    m = torch.full((T_q,), float("-inf"), dtype=torch.float64)
    l = torch.zeros(T_q, dtype=torch.float64)
    acc = torch.zeros(T_q, V.shape[1], dtype=torch.float64)
    for start in range(0, T_k, block_size):
        s = S[:, start:start + block_size]
        m_new = torch.maximum(m, s.max(dim=1).values)
        safe = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
        alpha = torch.exp(m - safe)
        p = torch.exp(s - safe[:, None])
        l = alpha * l + p.sum(dim=1)
        acc = alpha[:, None] * acc + p @ v[start:start + block_size]
        m = m_new
    out = torch.where(l[:, None] > 0, acc / torch.where(l > 0, l, torch.ones_like(l))[:, None],
                      torch.zeros_like(acc))
    return out.numpy()
