"""Name the common mistake behind a wrong positional encoding (ex04: the table, the shift
matrix) or a wrong variance of scaled scores (ex03), for failure messages that teach; as
:mod:`autograder.diagnose` does for attention. Nothing here reveals an expected value."""

from __future__ import annotations

import numpy as np

from autograder.diagnose import _matches


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
