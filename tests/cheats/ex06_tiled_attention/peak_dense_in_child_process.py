"""Cheat (memory rule): plain dense attention computed in a forked child process started
through multiprocessing, which exits before the call returns; the parent's memory stays
flat (review 2). Since issue 23 the peak is the high-water mark of the grader's probe's
memory cgroup, which holds every process the probe starts: the child's pages count,
however soon it exits.

status: graded
fails: test_peak_memory, test_peak_memory_causal
"""
# %% tiled_attention
import math
import multiprocessing as _mp

import numpy as np


def _alloc(r, c):
    return np.empty((r, c))


def _dense(Q, K, V, block_size, is_causal):
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
    del S
    return out


def _child(conn, args):
    conn.send(_dense(*args))
    conn.close()


def tiled_attention(Q, K, V, block_size=64, is_causal=False):
    if np.asarray(Q).ndim == 2 and np.asarray(Q).shape[0] >= 1024:
        ctx = _mp.get_context("fork")
        a, b = ctx.Pipe()
        p = ctx.Process(target=_child, args=(b, (Q, K, V, block_size, is_causal)))
        p.start()
        out = a.recv()
        p.join()
        return out
    return _dense(Q, K, V, block_size, is_causal)
