"""Wrong: uses |k|, so a negative offset moves forward instead of back.

fails: test_shift_negative_k
hint: a negative k moves forward as if it were |k|
"""
# %% relative_shift_matrix
import numpy as np


def relative_shift_matrix(k, d_model, base=10000.0):
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    k = abs(k)
    M = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        t = k * base ** (-2 * i / d_model)
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]]
    return M
