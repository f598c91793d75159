"""Wrong: the rotation written for the [sin | cos] layout (channel i pairs with i + d/2).

For d_model = 2 both layouts agree, so only wider matrices show the mistake.

fails: test_shift_known_values, test_shift_property, test_shift_negative_k, test_shift_base
hint: the blocks pair channel i with channel i + d_model/2
"""
# %% relative_shift_matrix
import numpy as np


def relative_shift_matrix(k, d_model, base=10000.0):
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    h = d_model // 2
    t = k * base ** (-2 * np.arange(h) / d_model)
    M = np.zeros((d_model, d_model))
    idx = np.arange(h)
    M[idx, idx] = M[idx + h, idx + h] = np.cos(t)
    M[idx, idx + h] = np.sin(t)
    M[idx + h, idx] = -np.sin(t)
    return M
