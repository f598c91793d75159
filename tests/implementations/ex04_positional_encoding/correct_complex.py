"""Correct alternative: complex exponentials e^{i pos w}: imaginary part sin, real part cos.

fails: none
"""
# %% sinusoidal_positional_encoding
import numpy as np


def sinusoidal_positional_encoding(T, d_model, base=10000.0):
    if d_model % 2 != 0:
        raise ValueError(f"sinusoidal encodings need an even d_model, got {d_model}")
    z = np.exp(1j * np.arange(T)[:, None] * base ** (-np.arange(d_model // 2) * 2.0 / d_model))
    out = np.zeros((T, d_model))
    out[:, ::2], out[:, 1::2] = z.imag, z.real
    return out
# %% relative_shift_matrix
import numpy as np


def relative_shift_matrix(k, d_model, base=10000.0):
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even, got {d_model}")
    z = np.exp(1j * k * base ** (-np.arange(d_model // 2) * 2.0 / d_model))
    blocks = np.zeros((d_model // 2, 2, 2))
    blocks[:, 0, 0] = blocks[:, 1, 1] = z.real
    blocks[:, 0, 1], blocks[:, 1, 0] = z.imag, -z.imag
    M = np.zeros((d_model, d_model))
    for i, b in enumerate(blocks):
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = b
    return M
