"""Cheat (issue 23, found by the adversarial review; fused kernel by another name): torch's
public ``torch.nn.attention.flex_attention.flex_attention`` in eager mode, whose kernel is a
higher-order operator with Python implementations registered in the operator itself (the
mask made an additive ``score_mod`` bias, empty rows zeroed). Each of those registrations is
switched off in the Python where the checker runs the learner's cells again, so every
scaled_dot_product_attention test, and every test that runs MultiHeadAttention, fails.

status: graded
fails: test_sdpa_known_values, test_sdpa_bool_mask, test_sdpa_float_mask, test_sdpa_masked_far_scores, test_sdpa_fully_masked, test_sdpa_is_causal, test_sdpa_dtype_device, test_sdpa_half_precision, test_sdpa_bad_input, test_sdpa_no_builtin, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
aims at: test_sdpa_known_values, test_sdpa_bool_mask, test_sdpa_float_mask, test_sdpa_masked_far_scores, test_sdpa_fully_masked, test_sdpa_is_causal, test_sdpa_dtype_device, test_sdpa_half_precision, test_sdpa_bad_input, test_sdpa_no_builtin, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
"""
# %% scaled_dot_product_attention
import math
import torch
from torch.nn.attention.flex_attention import flex_attention
def _core(q, k, v, b):
    return flex_attention(q, k, v, score_mod=lambda s, bb, h, qi, ki: s + b[bb, h, qi, ki])
def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False):
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"query {tuple(query.shape)} and key {tuple(key.shape)} differ in E")
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(f"key {tuple(key.shape)} and value {tuple(value.shape)} differ in S")
    dtype = query.dtype
    low = dtype in (torch.float16, torch.bfloat16)
    q, k, v = (t.float() if low else t for t in (query, key, value))
    L, S = q.shape[-2], k.shape[-2]
    sshape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]) + (L, S)
    bias = torch.zeros(L, S, dtype=q.dtype, device=q.device)
    if is_causal:
        bias = bias.masked_fill(~torch.ones(L, S, dtype=torch.bool, device=q.device).tril(), float("-inf"))
    if attn_mask is not None:
        try:
            shape = torch.broadcast_shapes(attn_mask.shape, sshape)
        except RuntimeError:
            raise ValueError(f"attn_mask {tuple(attn_mask.shape)} does not broadcast to {tuple(sshape)}")
        if tuple(shape) != tuple(sshape):
            raise ValueError(f"attn_mask {tuple(attn_mask.shape)} does not broadcast to {tuple(sshape)}")
        if attn_mask.dtype == torch.bool:
            bias = bias.masked_fill(~attn_mask, float("-inf"))
        else:
            bias = bias + attn_mask.to(q.dtype)
    bias = bias.expand(sshape)
    lead = sshape[:-2]
    qf = q.expand(lead + q.shape[-2:]).reshape(1, -1, L, q.shape[-1])
    kf = k.expand(lead + k.shape[-2:]).reshape(1, -1, S, k.shape[-1])
    vf = v.expand(lead + v.shape[-2:]).reshape(1, -1, S, v.shape[-1])
    bf = bias.reshape(1, -1, L, S)
    out = _core(qf, kf, vf, bf)
    dead = torch.isneginf(bf).all(dim=-1, keepdim=True)
    out = torch.where(dead, torch.zeros_like(out), out)
    return out.reshape(lead + (L, v.shape[-1])).to(dtype)
