"""Wrong: cosines on the even channels and sines on the odd ones.

fails: test_pe_known_values, test_pe_interleaved, test_pe_base
hint: sin and cos are swapped
"""
# %% sinusoidal_positional_encoding
import numpy as np


def sinusoidal_positional_encoding(T, d_model, base=10000.0):
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    w = base ** (-np.arange(0, d_model, 2) / d_model)
    angles = np.arange(T)[:, None] * w
    pe = np.empty((T, d_model))
    pe[:, 0::2] = np.cos(angles)
    pe[:, 1::2] = np.sin(angles)
    return pe
