"""Wrong: no check of d_model, so an odd width silently returns d_model - 1 channels.

fails: test_pe_odd_d_model
"""
# %% sinusoidal_positional_encoding
import numpy as np


def sinusoidal_positional_encoding(T, d_model, base=10000.0):
    w = base ** (-np.arange(0, d_model - 1, 2) / d_model)
    angles = np.arange(T)[:, None] * w
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(T, -1)
