"""Correct alternative: frequencies through exp/log; M_k = M_1^k with numpy's matrix_power.

matrix_power inverts M_1 for negative k, which is the shift back.

fails: none
"""
# %% sinusoidal_positional_encoding
import numpy as np


def sinusoidal_positional_encoding(T, d_model, base=10000.0):
    if d_model % 2:
        raise ValueError(f"d_model = {d_model} is odd")
    w = np.exp(-np.arange(0, d_model, 2) * np.log(base) / d_model)
    angles = np.outer(np.arange(T), w)
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(T, d_model)
# %% relative_shift_matrix
import numpy as np


def relative_shift_matrix(k, d_model, base=10000.0):
    if d_model % 2:
        raise ValueError(f"d_model = {d_model} is odd")
    w = np.exp(-np.arange(0, d_model, 2) * np.log(base) / d_model)
    c, s = np.cos(w), np.sin(w)
    M1 = np.kron(np.diag(c), np.eye(2)) + np.kron(np.diag(s), np.array([[0.0, 1.0], [-1.0, 0.0]]))
    return np.linalg.matrix_power(M1, k)
