"""Wrong: no check of d_k, so d_k = 0 returns 0.0 instead of raising ValueError.

fails: test_rejects_bad_d_k
"""
# %% dot_product_variance
import numpy as np


def dot_product_variance(d_k, n_samples, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n_samples, d_k))
    k = rng.standard_normal((n_samples, d_k))
    return float(np.var((q * k).sum(axis=1), ddof=1))
