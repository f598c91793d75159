"""Cheat (issue 23; a lying object): computes float16 and bfloat16 inputs in float32 and
forgets to cast back, returning a tensor subclass whose ``dtype`` property claims the
input's dtype (and whose ``shape`` and ``device`` say the same as the data). The kernel's
client reads dtype, shape and device through torch's base class, so the checker receives
a float32 tensor and judges it: only the half-precision test, which asks for the input's
dtype back, fails.

status: graded
fails: test_sdpa_half_precision
aims at: test_sdpa_half_precision
"""
# %% scaled_dot_product_attention
import math

import torch


class _Claims(torch.Tensor):
    claimed = None

    @property
    def dtype(self):
        return self.claimed or torch.Tensor.dtype.__get__(self)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False):
    L, E = query.shape[-2:]
    S = key.shape[-2]
    if key.shape[-1] != E:
        raise ValueError(f"query has E = {E} but key has E = {key.shape[-1]}")
    if value.shape[-2] != S:
        raise ValueError(f"key has S = {S} but value has S = {value.shape[-2]}")
    dtype = query.dtype
    if dtype in (torch.float16, torch.bfloat16):
        query, key, value = query.float(), key.float(), value.float()
    scores = query @ key.transpose(-2, -1) / math.sqrt(E)
    if is_causal:
        attn_mask = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
    if attn_mask is not None:
        try:
            torch.broadcast_shapes(attn_mask.shape, scores.shape)
        except RuntimeError:
            raise ValueError(f"attn_mask of shape {tuple(attn_mask.shape)} does not broadcast") from None
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask.to(scores.dtype)
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isinf(row_max), torch.zeros_like(row_max), row_max)
    weights = torch.exp(scores - row_max)
    total = weights.sum(dim=-1, keepdim=True)
    weights = weights / torch.where(total == 0, torch.ones_like(total), total)
    out = weights @ value
    if dtype in (torch.float16, torch.bfloat16):
        out = out.as_subclass(_Claims)
        out.claimed = dtype
    return out
