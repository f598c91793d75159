"""Cheat (memory resident before the call, issue 23): a cell of the learner's own (not a
solution cell) allocates and touches a 4096 x 4096 float64 buffer, and the graded function
writes its dense T x T scores into it when it finds it (else into a new array). In the
kernel the buffer is resident long before any call: a measure of the growth during the call
passes it. The grader's probe runs the setup and solution cells only, so the buffer does
not exist there and the call's own dense scores count.

status: graded
fails: test_peak_memory, test_peak_memory_causal
"""
# %% tiled_attention
import math

import numpy as np


def tiled_attention(Q, K, V, block_size=64, is_causal=False):
    Q, K, V = np.asarray(Q, dtype=float), np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    if Q.ndim != 2 or K.ndim != 2 or V.ndim != 2:
        raise ValueError(f"need 2-D arrays, got {Q.shape} {K.shape} {V.shape}")
    if Q.shape[1] != K.shape[1] or K.shape[0] != V.shape[0]:
        raise ValueError(f"shapes {Q.shape} {K.shape} {V.shape}")
    if not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size {block_size}")
    T_q, T_k = Q.shape[0], K.shape[0]
    if T_k == 0:
        return np.zeros((T_q, V.shape[1]))
    scratch = globals().get("_SCRATCH")
    if scratch is not None and T_q * T_k <= scratch.size:
        S = scratch.reshape(-1)[:T_q * T_k].reshape(T_q, T_k)
    else:
        S = np.empty((T_q, T_k))
    np.matmul(Q, K.T, out=S)
    S *= 1.0 / math.sqrt(Q.shape[1])
    if is_causal:
        for i in range(T_q):
            S[i, i + 1:] = -np.inf
    S -= S.max(axis=1, keepdims=True)
    np.exp(S, out=S)
    return (S @ V) / S.sum(axis=1, keepdims=True)
# %% -test_worked_example
# My own experiments: a big scratch buffer, touched now.
_SCRATCH = np.ones((4096, 4096))
