"""Name the common mistake behind a wrong answer, for failure messages that teach.

Each function takes the learner's result and the inputs that produced it, tries the
usual mistakes with NumPy in float64, and returns a sentence naming the one the result
matches ('' when none does). Nothing here reveals an expected value.
"""

from __future__ import annotations

import numpy as np


def _softmax(s: np.ndarray, axis: int = -1) -> np.ndarray:
    m = np.max(s, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    z = e.sum(axis=axis, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


def _matches(got, candidate, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
    try:
        g = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    c = np.asarray(candidate, dtype=np.float64)
    return g.shape == c.shape and bool(np.allclose(g, c, rtol=rtol, atol=atol, equal_nan=True))


def weights_hint(weights) -> str:
    """Why attention weights of shape (..., T_q, T_k) are wrong, if a common reason shows."""
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        return ""
    if w.ndim < 2:
        return ""
    if np.isnan(w).any():
        return ("some weights are NaN: a row whose keys are all masked gives 0/0; the course's "
                "convention is zero weights and a zero output for such a row")
    rows = w.sum(axis=-1)
    cols = w.sum(axis=-2)
    if not np.allclose(rows[rows > 0], 1.0, atol=1e-5):
        if np.allclose(cols, 1.0, atol=1e-5):
            return ("the weights sum to 1 over the queries, not over the keys: normalise each "
                    "row (axis=-1) of the score matrix")
        return "the weights of a query do not sum to 1 over the keys"
    return ""


MASK_INVERTED = ("the mask's meaning inverted: True means the query MAY attend to the key, "
                 "so the score becomes -inf where the mask is False")


def mask_hint(weights, mask) -> str:
    """Whether attention weights (..., T_q, T_k) look as if the boolean ``mask`` (True = may
    attend, broadcastable to them) were read the other way round: in every query row with a
    False entry, the weights are 0 where the mask is True and sum to 1 where it is False
    (rows whose keys are all allowed are not looked at: their inverted weights may be 0 or
    NaN). '' otherwise, or when the mask has no False entry."""
    try:
        w = np.asarray(weights, dtype=np.float64)
        m = np.broadcast_to(np.asarray(mask, dtype=bool), w.shape)
    except (TypeError, ValueError):
        return ""
    if w.ndim < 2 or w.size == 0:
        return ""
    rows = (~m).any(axis=-1)
    if not rows.any():
        return ""
    w, m = w[rows], m[rows]
    if not np.isfinite(w).all():
        return ""
    on_true = np.where(m, w, 0.0)
    on_false = np.where(m, 0.0, w).sum(axis=-1)
    if np.all(on_true == 0.0) and np.allclose(on_false, 1.0, atol=1e-5):
        return f"your weights match attention with {MASK_INVERTED}"
    return ""


def attention_hint(got, Q, K, V, mask=None, d_model: int | None = None) -> str:
    """Which common mistake the attention output ``got`` matches, for inputs Q, K, V.

    Q: (..., T_q, d_k), K: (..., T_k, d_k), V: (..., T_k, d_v); ``mask`` boolean,
    True = may attend. Tries: no scale, 1/d_k, 1/sqrt(d_model), an inverted mask, the
    softmax over the query axis, and the output transposed.
    """
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2)

    def attend(scale, m=mask, axis=-1):
        s = scores * scale
        if m is not None:
            s = np.where(np.asarray(m, dtype=bool), s, -np.inf)
        return _softmax(s, axis=axis) @ V

    candidates = [
        (lambda: attend(1.0), "without the 1/sqrt(d_k) scale"),
        (lambda: attend(1.0 / d_k), "with the scores divided by d_k instead of sqrt(d_k)"),
    ]
    if d_model and d_model != d_k:
        candidates.append((lambda: attend(1.0 / np.sqrt(d_model)),
                           "with the scale 1/sqrt(d_model) instead of 1/sqrt(d_k), where "
                           "d_k = d_model / num_heads is the size of one head"))
    if mask is not None:
        candidates.append((lambda: attend(1.0 / np.sqrt(d_k), ~np.asarray(mask, dtype=bool)),
                           "with the mask's meaning inverted: True means the query MAY attend "
                           "to the key"))
    if scores.shape[-1] == scores.shape[-2] or scores.shape[-2] > 1:
        candidates.append((lambda: attend(1.0 / np.sqrt(d_k), axis=-2),
                           "with the softmax taken over the queries (axis -2) instead of the "
                           "keys (axis -1)"))
    for make, words in candidates:
        try:
            if _matches(got, make()):
                return f"your output matches attention {words}"
        except (ValueError, FloatingPointError):
            continue
    try:
        g = np.asarray(got, dtype=np.float64)
        if np.isnan(g).any():
            return ("the output has NaN: a row whose keys are all masked must give a zero "
                    "output, and exp of a huge score overflows unless the row maximum is "
                    "subtracted first")
    except (TypeError, ValueError):
        pass
    return ""


def _online(Q, K, V, block_size: int, is_causal: bool, rescale_acc: bool = True,
            start: float = -np.inf, rescale_l: bool = True) -> np.ndarray:
    """Tiled attention with the online softmax (top-left causal mask); without
    ``rescale_acc`` the accumulator, without ``rescale_l`` the running sum l, is not
    rescaled when the running maximum grows; ``start``: the running maximum's first value."""
    T_q, T_k, d_v = Q.shape[0], K.shape[0], V.shape[1]
    m, l, acc = np.full(T_q, start), np.zeros(T_q), np.zeros((T_q, d_v))
    with np.errstate(all="ignore"):
        for start in range(0, T_k, block_size):
            stop = min(start + block_size, T_k)
            S = Q @ K[start:stop].T / np.sqrt(Q.shape[1])
            if is_causal:
                S = np.where(np.arange(T_q)[:, None] >= np.arange(start, stop), S, -np.inf)
            m_new = np.maximum(m, S.max(axis=1))
            safe = np.where(np.isfinite(m_new), m_new, 0.0)
            alpha = np.exp(m - safe)
            P = np.exp(S - safe[:, None])
            l = (alpha * l if rescale_l else l) + P.sum(axis=1)
            acc = (alpha[:, None] * acc if rescale_acc else acc) + P @ V[start:stop]
            m = m_new
    out = np.zeros((T_q, d_v))
    np.divide(acc, l[:, None], out=out, where=l[:, None] > 0)
    return out


def tiled_attention_hint(got, Q, K, V, block_size: int, is_causal: bool) -> str:
    """Which usual mistake of tiled attention (ex06) the output ``got`` matches, for Q
    (T_q, d_k), K (T_k, d_k), V (T_k, d_v) in float64, key blocks of ``block_size``.

    Tries, where the inputs can show them: the accumulator, the running sum l, or both not
    rescaled by exp(m_old - m_new) when the running maximum grows; the last partial key
    block skipped; a causal mask comparing the query
    with the key's index inside its block, or aligned bottom-right; then names NaN."""
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    T_q, T_k = Q.shape[0], K.shape[0]
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    i, j = np.arange(T_q)[:, None], np.arange(T_k)[None, :]

    def dense(allowed, keys=T_k):
        s = np.where(allowed, scores, -np.inf)[:, :keys]
        w = np.where(np.isfinite(s).any(axis=1, keepdims=True), _softmax(s), 0.0)
        return w @ V[:keys]

    top_left = (j <= i) if is_causal else np.ones((T_q, T_k), dtype=bool)
    candidates = [(lambda: _online(Q, K, V, block_size, is_causal, start=0.0),
                   "the running maximum started at 0: scores far below 0 then underflow; "
                   "start it at -inf")]
    if T_k > block_size:
        candidates.append((lambda: _online(Q, K, V, block_size, is_causal, rescale_acc=False),
                           "the accumulator not rescaled when the running maximum grows: "
                           "acc must be multiplied by exp(m_old - m_new), as the normaliser is"))
        candidates.append((lambda: _online(Q, K, V, block_size, is_causal, rescale_l=False),
                           "the running sum l (the normaliser) not rescaled when the running "
                           "maximum grows: l must be multiplied by exp(m_old - m_new), as the "
                           "accumulator is"))
        candidates.append((lambda: _online(Q, K, V, block_size, is_causal, rescale_acc=False,
                                           rescale_l=False),
                           "neither the accumulator nor the running sum l rescaled when the "
                           "running maximum grows: multiply both by exp(m_old - m_new) before "
                           "adding the new block"))
    if T_k % block_size and T_k > block_size:
        candidates.append((lambda: dense(top_left, T_k - T_k % block_size),
                           f"the last partial block of keys skipped: T_k = {T_k} keys in "
                           f"blocks of {block_size} leave {T_k % block_size} in a last, "
                           "shorter block"))
    if is_causal and T_k > block_size:
        candidates.append((lambda: dense(j % block_size <= i),
                           "a causal mask that compares the query's position with the key's "
                           "index inside its block: use the key's position, block start + index"))
    if is_causal and T_q != T_k:
        candidates.append((lambda: dense(j <= i + T_k - T_q),
                           "a bottom-right aligned causal mask: query i sees keys j <= i "
                           "(top-left), as in exercise 6"))
    for make, words in candidates:
        try:
            if _matches(got, make()):
                return f"your output matches tiled attention with {words}"
        except (ValueError, FloatingPointError):
            continue
    g = np.asarray(got, dtype=np.float64) if isinstance(got, np.ndarray) else None
    if g is not None and not np.isfinite(g).all():
        return ("the output has NaN or infinity: start the running maximum at -inf (not 0), "
                "take each block's exponentials relative to the running maximum, and give a "
                "query with no key (a normaliser of 0) a zero row, not 0/0")
    return ""
