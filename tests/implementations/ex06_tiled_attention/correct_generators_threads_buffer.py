"""Correct alternative, written unusually: the key blocks come from a generator, the queries
are split between two threads, and each thread writes its block scores into a small buffer
(rows x block_size) kept from one call to the next. Its peak memory is a few (T_q, d_v) and
(T_q, block_size) arrays, far under the limit, however it is measured.

fails: none
"""
# %% tiled_attention
import threading

import numpy as np

_BUFFERS = {}  # (thread, rows, block_size) -> a reused score buffer
_LOCK = threading.Lock()


def _key_blocks(K, V, block_size, end):
    for start in range(0, end, block_size):
        stop = min(start + block_size, K.shape[0])
        yield start, K[start:stop], V[start:stop]


def _buffer(part, rows, block_size):
    with _LOCK:
        key = (part, rows, block_size)
        if key not in _BUFFERS:
            _BUFFERS.clear() if len(_BUFFERS) > 8 else None
            _BUFFERS[key] = np.empty((rows, block_size))
        return _BUFFERS[key]


def _rows(part, Qs, K, V, q0, block_size, is_causal, out):
    T_q = Qs.shape[0]
    m = np.full(T_q, -np.inf)
    l = np.zeros(T_q)
    acc = np.zeros((T_q, V.shape[1]))
    pos = np.arange(q0, q0 + T_q)[:, None]
    end = min(K.shape[0], q0 + T_q) if is_causal else K.shape[0]
    buf = _buffer(part, T_q, block_size)
    for start, Kb, Vb in _key_blocks(K, V, block_size, end):
        S = buf[:, :Kb.shape[0]]
        np.matmul(Qs, Kb.T, out=S)
        if is_causal:
            S[pos < np.arange(start, start + Kb.shape[0])] = -np.inf
        m_new = np.maximum(m, S.max(axis=1))
        shift = np.where(np.isfinite(m_new), m_new, 0.0)
        alpha = np.exp(m - shift)
        np.subtract(S, shift[:, None], out=S)
        np.exp(S, out=S)
        l = alpha * l + S.sum(axis=1)
        acc *= alpha[:, None]
        acc += S @ Vb
        m = m_new
    np.divide(acc, l[:, None], out=out, where=l[:, None] > 0)


def tiled_attention(Q, K, V, block_size=64, is_causal=False):
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    for name, x in (("Q", Q), ("K", K), ("V", V)):
        if x.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {x.shape}")
    if Q.shape[1] != K.shape[1]:
        raise ValueError(f"Q has d_k = {Q.shape[1]} but K has d_k = {K.shape[1]}")
    if K.shape[0] != V.shape[0]:
        raise ValueError(f"K has T_k = {K.shape[0]} rows but V has {V.shape[0]}")
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    block_size = int(block_size)
    T_q = Q.shape[0]
    out = np.zeros((T_q, V.shape[1]))
    Qs = Q / np.sqrt(Q.shape[1])
    half = (T_q + 1) // 2
    threads = [threading.Thread(target=_rows, args=(i, Qs[q0:q1], K, V, q0, block_size,
                                                     is_causal, out[q0:q1]))
               for i, (q0, q1) in enumerate([(0, half), (half, T_q)]) if q1 > q0]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out
