"""Wrong: only d_k == 0 is checked; a negative d_k raises numpy's own ValueError
('negative dimensions are not allowed'), whose message does not name d_k.

fails: test_rejects_bad_d_k
"""
# %% dot_product_variance
import numpy as np


def dot_product_variance(d_k, n_samples, seed=0):
    if d_k == 0:
        raise ValueError("d_k = 0: there is no dot product of empty vectors")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n_samples, d_k))
    k = rng.standard_normal((n_samples, d_k))
    return float(np.var(np.einsum("nd,nd->n", q, k), ddof=1))
