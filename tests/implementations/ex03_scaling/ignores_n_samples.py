"""Wrong: ignores n_samples and always draws a fixed 10 000 pairs. Asked for the sample
variance of 3 draws, it returns one of 10 000, whose spread over seeds is far narrower (the
small-sample check of test_variance_close_to_d_k).

fails: test_seed_reproducible, test_variance_close_to_d_k
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
