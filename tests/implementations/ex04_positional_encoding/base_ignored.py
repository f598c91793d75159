"""Wrong: 10000 hard-coded in both functions; the base argument is ignored.

fails: test_pe_base, test_shift_base
hint: the base argument is ignored
"""
# %% sinusoidal_positional_encoding
import numpy as np


def sinusoidal_positional_encoding(T, d_model, base=10000.0):
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    w = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    angles = np.arange(T)[:, None] * w
    pe = np.empty((T, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
    return pe
# %% relative_shift_matrix
import numpy as np


def relative_shift_matrix(k, d_model, base=10000.0):
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    M = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        t = k * 10000.0 ** (-2 * i / d_model)
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]]
    return M
