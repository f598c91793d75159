"""Correct alternative: Python loops with math.sin/cos and pos / base**(2i/d_model).

fails: none
"""
# %% sinusoidal_positional_encoding
import math

import numpy as np


def sinusoidal_positional_encoding(T, d_model, base=10000.0):
    if d_model % 2 == 1:
        raise ValueError(f"odd d_model = {d_model}: channels come in (sin, cos) pairs")
    rows = []
    for pos in range(T):
        row = []
        for i in range(d_model // 2):
            angle = pos / base ** (2 * i / d_model)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return np.array(rows, dtype=np.float64).reshape(T, d_model)
# %% relative_shift_matrix
import math

import numpy as np


def relative_shift_matrix(k, d_model, base=10000.0):
    if d_model % 2 == 1:
        raise ValueError(f"odd d_model = {d_model}")
    M = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        theta = k / base ** (2 * i / d_model)
        M[2 * i, 2 * i] = M[2 * i + 1, 2 * i + 1] = math.cos(theta)
        M[2 * i, 2 * i + 1] = math.sin(theta)
        M[2 * i + 1, 2 * i] = -math.sin(theta)
    return M
