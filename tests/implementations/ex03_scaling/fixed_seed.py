"""Wrong: always seeds with 0, so different seeds give the same value. Its estimates over
many seeds are then one value, not the spread of a sample variance of a few draws, which the
small-sample check of test_variance_close_to_d_k judges (it is what tells real draws from a
value made to lie near d_k).

fails: test_seed_reproducible, test_variance_close_to_d_k
"""
# %% dot_product_variance
import numpy as np


def dot_product_variance(d_k, n_samples, seed=0):
    if d_k < 1:
        raise ValueError(f"d_k must be >= 1, got {d_k}")
    rng = np.random.default_rng(0)
    q = rng.standard_normal((n_samples, d_k))
    k = rng.standard_normal((n_samples, d_k))
    return float(np.var((q * k).sum(axis=1), ddof=1))
