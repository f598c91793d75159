"""Wrong: the variance of the *scaled* score q . k / sqrt(d_k) (about 1, not d_k).

fails: test_variance_close_to_d_k
hint: it looks like the variance of the scaled score
"""
# %% dot_product_variance
import numpy as np


def dot_product_variance(d_k, n_samples, seed=0):
    if d_k < 1:
        raise ValueError(f"d_k must be >= 1, got {d_k}")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n_samples, d_k))
    k = rng.standard_normal((n_samples, d_k))
    return float(np.var((q * k).sum(axis=1) / np.sqrt(d_k), ddof=1))
