"""Wrong: ignores n_samples and always draws a fixed 10 000 pairs.

fails: test_seed_reproducible
"""
# %% dot_product_variance
import numpy as np


def dot_product_variance(d_k, n_samples, seed=0):
    if d_k < 1:
        raise ValueError(f"d_k must be at least 1, got d_k = {d_k}")
    N = 10_000  # plenty of samples
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((N, d_k))
    k = rng.standard_normal((N, d_k))
    return float(np.var(np.sum(q * k, axis=1), ddof=1))
