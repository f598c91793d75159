"""Cheat (memory resident before the call, issue 23): the solution cell writes a 128 MiB
file in /dev/shm (a tmpfs: its pages are shared memory, resident from the write on) and
every call maps it (np.memmap, r+) to hold its dense T x T scores. The call itself touches
no new page: a measure of the growth during the call passes it. The file is written after
the grader's probe took its baseline, in the cgroup it measures (tmpfs pages are charged
to the cgroup that writes them): its 128 MiB count.

status: graded
fails: test_peak_memory, test_peak_memory_causal
"""
# %% tiled_attention
import math
import os
import tempfile

import numpy as np

_DIR = "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
_FILE = os.path.join(_DIR, f"scores-{os.getpid()}.bin")
with open(_FILE, "wb") as _f:
    _chunk = b"\1" * 2**20
    for _ in range(128):
        _f.write(_chunk)
_SCORES = np.memmap(_FILE, dtype=np.float64, mode="r+", shape=(4096, 4096))


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
    if T_q * T_k <= _SCORES.size:
        S = _SCORES.reshape(-1)[:T_q * T_k].reshape(T_q, T_k)
        np.matmul(Q, K.T, out=S)
    else:
        S = Q @ K.T
    S *= 1.0 / math.sqrt(Q.shape[1])
    if is_causal:
        for i in range(T_q):
            S[i, i + 1:] = -np.inf
    S -= S.max(axis=1, keepdims=True)
    np.exp(S, out=S)
    return np.asarray((S @ V) / S.sum(axis=1, keepdims=True))
