"""Correct alternative: the legacy np.random.RandomState generator, variance written out.

fails: none
"""
# %% dot_product_variance
import numpy as np


def dot_product_variance(d_k, n_samples, seed=0):
    if d_k < 1 or n_samples < 2:
        raise ValueError(f"need d_k >= 1 and n_samples >= 2, got d_k={d_k}, n_samples={n_samples}")
    rs = np.random.RandomState(seed)
    x = np.sum(rs.randn(n_samples, d_k) * rs.randn(n_samples, d_k), axis=1)
    return float(((x - x.mean()) ** 2).sum() / (n_samples - 1))
