"""Wrong: w_i = base^(-i/d_model) (the factor 2 forgotten), in both functions.

The first pair (w_0 = 1) is still right, so the interleaving check passes.

fails: test_pe_known_values, test_pe_base, test_shift_known_values, test_shift_property, test_shift_negative_k, test_shift_base
hint: the exponent is i/d_model instead of 2i/d_model
"""
# %% sinusoidal_positional_encoding
import numpy as np


def sinusoidal_positional_encoding(T, d_model, base=10000.0):
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    w = base ** (-np.arange(d_model // 2) / d_model)
    angles = np.arange(T)[:, None] * w
    pe = np.empty((T, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe
# %% relative_shift_matrix
import numpy as np


def relative_shift_matrix(k, d_model, base=10000.0):
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    M = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        t = k * base ** (-i / d_model)
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]]
    return M
