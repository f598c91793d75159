"""Wrong: returns the standard deviation of q . k (about sqrt(d_k)) instead of its variance.

fails: test_variance_close_to_d_k
hint: it looks like the standard deviation of q . k, not its variance
"""
# %% dot_product_variance
import numpy as np


def dot_product_variance(d_k, n_samples, seed=0):
    if d_k < 1:
        raise ValueError(f"d_k must be >= 1, got {d_k}")
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n_samples, d_k)) * rng.standard_normal((n_samples, d_k))).sum(1)
    return float(x.std(ddof=1))
