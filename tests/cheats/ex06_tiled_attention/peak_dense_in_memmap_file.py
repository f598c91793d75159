"""Cheat (memory rule): dense attention whose T x T score matrix is a np.memmap of a file in
the working folder, kept mapped after the call (RssFile, not counted before review 2).
Since issue 23 the call runs in the grader's probe, whose working folder is a tmpfs: the
file's pages are charged to the probe's memory cgroup and count.

status: graded
fails: test_peak_memory, test_peak_memory_causal
"""
# %% tiled_attention
import math
import os

import numpy as np

_N = [0]


_KEEP = []


def _alloc(r, c):
    _N[0] += 1
    path = f"scores-{os.getpid()}-{_N[0]}.bin"
    S = np.memmap(path, dtype=np.float64, mode="w+", shape=(max(r, 1), max(c, 1)))[:r, :c]
    os.unlink(path)
    return S


def tiled_attention(Q, K, V, block_size=64, is_causal=False):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    if Q.ndim != 2 or K.ndim != 2 or V.ndim != 2:
        raise ValueError(f"need 2-D arrays, got {Q.shape} {K.shape} {V.shape}")
    if Q.shape[1] != K.shape[1] or K.shape[0] != V.shape[0]:
        raise ValueError(f"shapes {Q.shape} {K.shape} {V.shape}")
    if not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size {block_size}")
    T_q, T_k = Q.shape[0], K.shape[0]
    if T_k == 0:
        return np.zeros((T_q, V.shape[1]))
    S = _alloc(T_q, T_k)
    np.matmul(Q, K.T, out=S)
    S *= 1.0 / math.sqrt(Q.shape[1])
    if is_causal:
        for i in range(T_q):
            S[i, i + 1:] = -np.inf
    m = S.max(axis=1, keepdims=True)
    np.subtract(S, m, out=S)
    np.exp(S, out=S)
    s = S.sum(axis=1, keepdims=True)
    out = (S @ V) / s
    _KEEP.append(S)
    return out
