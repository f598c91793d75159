"""Wrong: draws one query q and reuses it for every sample (broadcasting slip).

Given q, the variance of q . k is |q|^2, which is d_k only on average over q: its spread
(sqrt(2 d_k)) is many standard errors of the estimate, so the hidden checks over several
d_k and seeds catch it.

fails: test_variance_close_to_d_k
"""
# %% dot_product_variance
import numpy as np


def dot_product_variance(d_k, n_samples, seed=0):
    if d_k < 1:
        raise ValueError(f"d_k must be >= 1, got {d_k}")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(d_k)                  # one query for all samples
    k = rng.standard_normal((n_samples, d_k))
    return float(np.var(k @ q, ddof=1))
