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


def positional_encoding_hint(got, T: int, d_model: int, base: float = 10000.0) -> str:
    """Which common layout or exponent mistake a (T, d_model) encoding matches."""
    pos = np.arange(T)[:, None]
    i = np.arange(d_model // 2)[None, :]
    angle = pos * base ** (-2 * i / d_model)
    sin, cos = np.sin(angle), np.cos(angle)

    def interleave(a, b):
        out = np.empty((T, d_model))
        out[:, 0::2], out[:, 1::2] = a, b
        return out

    candidates = [
        (np.concatenate([sin, cos], axis=1),
         "sin and cos are concatenated ([sin..., cos...]) instead of interleaved (sin on even "
         "channels 2i, cos on odd channels 2i+1)"),
        (interleave(cos, sin), "sin and cos are swapped: sin goes on the even channels"),
        (interleave(np.sin(pos * base ** (-i / d_model)), np.cos(pos * base ** (-i / d_model))),
         "the exponent is i/d_model instead of 2i/d_model"),
        (interleave(np.sin(pos * 10000.0 ** (-2 * i / d_model)),
                    np.cos(pos * 10000.0 ** (-2 * i / d_model))),
         "the base argument is ignored (10000 is used whatever base is)"),
    ]
    for candidate, words in candidates:
        if base == 10000.0 and "base argument" in words:
            continue
        if _matches(got, candidate, rtol=1e-9, atol=1e-9):
            return f"your encoding looks as if {words}"
    return ""


def shift_matrix_hint(got, k: int, d_model: int, base: float = 10000.0) -> str:
    """Which common mistake a (d_model, d_model) shift matrix M_k matches.

    Tries: the rotation blocks transposed (that is M_{-k}), |k| for a negative k, and the
    blocks written for the concatenated [sin..., cos...] layout.
    """
    w = base ** (-2 * np.arange(d_model // 2) / d_model)

    def interleaved(theta):
        M = np.zeros((d_model, d_model))
        for i, t in enumerate(theta):
            M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]]
        return M

    def concatenated(theta):
        h = d_model // 2
        M, idx = np.zeros((d_model, d_model)), np.arange(h)
        M[idx, idx] = M[idx + h, idx + h] = np.cos(theta)
        M[idx, idx + h], M[idx + h, idx] = np.sin(theta), -np.sin(theta)
        return M

    candidates = []
    if k > 0:
        candidates.append((interleaved(-k * w), "the rotation blocks are transposed: for the "
                           "pair (sin, cos) the block is [[cos, sin], [-sin, cos]]"))
    if k < 0:  # M_{|k|}: the same matrix as transposed blocks, for a negative k
        candidates.append((interleaved(-k * w), "a negative k moves forward as if it were |k| "
                           "(or the rotation blocks are transposed): M_k must move back"))
    if d_model > 2 and k != 0:
        candidates.append((concatenated(k * w), "the blocks pair channel i with channel "
                           "i + d_model/2 ([sin..., cos...] layout) instead of 2i with 2i + 1"))
    for candidate, words in candidates:
        if _matches(got, candidate, rtol=1e-9, atol=1e-9):
            return f"your matrix looks as if {words}"
    return ""


def variance_hint(got, d_k: int, n_samples: int) -> str:
    """Which common mistake an estimate of Var(q . k) = d_k matches (statistically).

    Tries: the standard deviation sqrt(d_k) instead of the variance, and a variance near 1
    (the scaled score q.k / sqrt(d_k), or single products q_i k_i instead of their sum).
    """
    try:
        v = float(np.asarray(got, dtype=np.float64).reshape(-1)[0])
    except (TypeError, ValueError, IndexError):
        return ""
    sd = np.sqrt((2.0 * d_k**2 + 6.0 * d_k) / n_samples)  # sd of the estimate of d_k
    if d_k >= 4 and abs(v - np.sqrt(d_k)) < 6 * sd / (2 * np.sqrt(d_k)) + 1e-12:
        return ("your value is close to sqrt(d_k): it looks like the standard deviation of "
                "q . k, not its variance")
    if d_k >= 4 and abs(v - 1.0) < 6 * np.sqrt(8.0 / n_samples):
        return ("your value is close to 1, not d_k: it looks like the variance of the scaled "
                "score q . k / sqrt(d_k), or of single products q_i k_i instead of their sum")
    return ""
