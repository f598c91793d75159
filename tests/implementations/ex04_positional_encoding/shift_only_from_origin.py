"""Wrong: a rank-one M = PE(k) PE(0)^T / |PE(0)|^2: right for pos = 0, wrong elsewhere.

It maps PE(0) to PE(k), but a linear map that works for every position must not depend
on pos, and this one only knows position 0.

fails: test_shift_known_values, test_shift_property, test_shift_negative_k, test_shift_base
"""
# %% relative_shift_matrix
import numpy as np


def relative_shift_matrix(k, d_model, base=10000.0):
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    w = base ** (-np.arange(0, d_model, 2) / d_model)
    pe0 = np.stack([np.zeros_like(w), np.ones_like(w)], axis=-1).reshape(-1)
    pek = np.stack([np.sin(k * w), np.cos(k * w)], axis=-1).reshape(-1)
    return np.outer(pek, pe0) / (pe0 @ pe0)
