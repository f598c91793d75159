"""Wrong: the variance of the products q_i k_i (about 1) instead of their sums q . k.

fails: test_variance_close_to_d_k
hint: or of single products q_i k_i instead of their sum
"""
# %% dot_product_variance
import numpy as np


def dot_product_variance(d_k, n_samples, seed=0):
    if d_k < 1:
        raise ValueError(f"d_k must be >= 1, got {d_k}")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n_samples, d_k))
    k = rng.standard_normal((n_samples, d_k))
    return float(np.var(q * k, ddof=1))
