"""Wrong: returns a one-element array instead of a float (the values are right).

fails: test_returns_a_float
"""
# %% dot_product_variance
import numpy as np


def dot_product_variance(d_k, n_samples, seed=0):
    if d_k < 1:
        raise ValueError(f"d_k must be >= 1, got {d_k}")
    rng = np.random.default_rng(seed)
    x = np.einsum("nd,nd->n", rng.standard_normal((n_samples, d_k)),
                  rng.standard_normal((n_samples, d_k)))
    return np.array([x.var(ddof=1)])
