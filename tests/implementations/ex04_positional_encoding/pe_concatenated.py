"""Wrong: all sines first, then all cosines ([sin | cos]) instead of interleaving them.

fails: test_pe_known_values, test_pe_interleaved, test_pe_base
hint: sin and cos are concatenated ([sin..., cos...]) instead of interleaved
"""
# %% sinusoidal_positional_encoding
import numpy as np


def sinusoidal_positional_encoding(T, d_model, base=10000.0):
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    w = base ** (-np.arange(0, d_model, 2) / d_model)
    angles = np.arange(T)[:, None] * w
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)
