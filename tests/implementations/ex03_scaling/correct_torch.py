"""Correct alternative: torch's generator in float64; Tensor.var is the unbiased estimate.

fails: none
"""
# %% dot_product_variance
import torch


def dot_product_variance(d_k, n_samples, seed=0):
    if d_k < 1:
        raise ValueError(f"d_k = {d_k}: the vectors need at least one component")
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n_samples, d_k, generator=g, dtype=torch.float64)
    k = torch.randn(n_samples, d_k, generator=g, dtype=torch.float64)
    return (q * k).sum(dim=1).var().item()
