"""Cheat (memory resident before the call, issue 23): the solution cell forks a worker
process (multiprocessing) that allocates and touches a 4096 x 4096 float64 buffer at once
and then waits; each call sends Q, K, V to it, the worker writes the dense T x T scores into
its buffer and sends the output back. The worker's memory is resident before the call and
does not grow during it: a measure of the growth of the processes during the call passes
it. The worker is started after the grader's probe took its baseline, in the cgroup it
measures: its 128 MiB count.

status: graded
fails: test_peak_memory, test_peak_memory_causal
"""
# %% tiled_attention
import math
import multiprocessing as _mp

import numpy as np


def _dense(Q, K, V, is_causal, buffer):
    T_q, T_k = Q.shape[0], K.shape[0]
    if T_q * T_k <= buffer.size:
        S = buffer.reshape(-1)[:T_q * T_k].reshape(T_q, T_k)
        np.matmul(Q, K.T, out=S)
    else:
        S = Q @ K.T
    S *= 1.0 / math.sqrt(Q.shape[1])
    if is_causal:
        for i in range(T_q):
            S[i, i + 1:] = -np.inf
    S -= S.max(axis=1, keepdims=True)
    np.exp(S, out=S)
    return (S @ V) / S.sum(axis=1, keepdims=True)


def _serve(conn):
    buffer = np.ones((4096, 4096))  # resident before any call
    while True:
        job = conn.recv()
        if job is None:
            return
        conn.send(_dense(*job, buffer))


_PARENT, _CHILD = _mp.get_context("fork").Pipe()
_WORKER = _mp.get_context("fork").Process(target=_serve, args=(_CHILD,), daemon=True)
_WORKER.start()
_PARENT.send((np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)), False))
_PARENT.recv()  # the worker is up, its buffer touched


def tiled_attention(Q, K, V, block_size=64, is_causal=False):
    Q, K, V = np.asarray(Q, dtype=float), np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    if Q.ndim != 2 or K.ndim != 2 or V.ndim != 2:
        raise ValueError(f"need 2-D arrays, got {Q.shape} {K.shape} {V.shape}")
    if Q.shape[1] != K.shape[1] or K.shape[0] != V.shape[0]:
        raise ValueError(f"shapes {Q.shape} {K.shape} {V.shape}")
    if not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size {block_size}")
    if K.shape[0] == 0:
        return np.zeros((Q.shape[0], V.shape[1]))
    _PARENT.send((Q, K, V, bool(is_causal)))
    return _PARENT.recv()
