"""Cheat (forbidden builtin): torch's scaled_dot_product_attention kept under a built name
in a dictionary, so no name refers to it (review 1, hole 4). Run again in a Python where
torch's attention kernels are switched off in the dispatcher, it raises: every
scaled_dot_product_attention test fails, and every test that runs MultiHeadAttention.

status: graded
fails: test_sdpa_known_values, test_sdpa_bool_mask, test_sdpa_float_mask, test_sdpa_masked_far_scores, test_sdpa_fully_masked, test_sdpa_is_causal, test_sdpa_dtype_device, test_sdpa_half_precision, test_sdpa_bad_input, test_sdpa_no_builtin, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
"""
# %% scaled_dot_product_attention
import torch

_H = {"f": getattr(torch._C._nn, "scaled_dot_product_" + "attention")}


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False):
    dt = query.dtype
    lowp = dt in (torch.float16, torch.bfloat16)
    q, k, v = (t.float() if lowp else t for t in (query, key, value))
    m = attn_mask
    if m is not None and m.dtype != torch.bool:
        m = m.to(q.dtype)
    out = _H["f"](q, k, v, attn_mask=m, is_causal=is_causal)
    return torch.nan_to_num(out, nan=0.0).to(dt)
