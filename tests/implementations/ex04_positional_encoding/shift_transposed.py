"""Wrong: the rotation blocks transposed, [[cos, -sin], [sin, cos]]: that is M_{-k}.

fails: test_shift_known_values, test_shift_property, test_shift_negative_k, test_shift_base
hint: the rotation blocks are transposed
"""
# %% relative_shift_matrix
import numpy as np


def relative_shift_matrix(k, d_model, base=10000.0):
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    M = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        t = k * base ** (-2 * i / d_model)
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]]
    return M
