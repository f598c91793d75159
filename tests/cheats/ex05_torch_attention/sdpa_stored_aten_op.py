"""Cheat (forbidden builtin, variant): the aten operator (``torch.ops.aten``) reached by a
built name. Since issue 23 nothing in the kernel watches torch: the values are right
there, but every ex05 test first has the learner's cells run again in a Python where the
dispatcher's attention kernels are switched off (the rule by construction); there the
function raises, so every scaled_dot_product_attention test fails, and so does every test
that runs MultiHeadAttention (which attends through it). Formerly ``tampering``.

status: graded
fails: test_sdpa_known_values, test_sdpa_bool_mask, test_sdpa_float_mask, test_sdpa_masked_far_scores, test_sdpa_fully_masked, test_sdpa_is_causal, test_sdpa_dtype_device, test_sdpa_half_precision, test_sdpa_bad_input, test_sdpa_no_builtin, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
"""
# %% scaled_dot_product_attention
import torch

_OPS = getattr(torch.ops.aten, "scaled_dot_product_" + "attention")


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False):
    dt = query.dtype
    lowp = dt in (torch.float16, torch.bfloat16)
    q, k, v = (t.float() if lowp else t for t in (query, key, value))
    m = attn_mask
    if m is not None and m.dtype != torch.bool:
        m = m.to(q.dtype)
    out = _OPS(q, k, v, attn_mask=m, is_causal=is_causal)
    return torch.nan_to_num(out, nan=0.0).to(dt)
