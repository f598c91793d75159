"""Cheat (issue 23; fused kernel by another name): torch's own math implementation of
attention, ``torch.ops.aten._scaled_dot_product_attention_math``, which no deny-list of
function names had (a boolean mask made additive, empty rows zeroed). It is switched off
in the dispatcher of the Python where the checker runs the learner's cells again, so every
scaled_dot_product_attention test, and every test that runs MultiHeadAttention, fails.

status: graded
fails: test_sdpa_known_values, test_sdpa_bool_mask, test_sdpa_float_mask, test_sdpa_masked_far_scores, test_sdpa_fully_masked, test_sdpa_is_causal, test_sdpa_dtype_device, test_sdpa_half_precision, test_sdpa_bad_input, test_sdpa_no_builtin, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
aims at: test_sdpa_known_values, test_sdpa_bool_mask, test_sdpa_float_mask, test_sdpa_masked_far_scores, test_sdpa_fully_masked, test_sdpa_is_causal, test_sdpa_dtype_device, test_sdpa_half_precision, test_sdpa_bad_input, test_sdpa_no_builtin, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
"""
# %% scaled_dot_product_attention
import torch


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False):
    if key.shape[-1] != query.shape[-1] or value.shape[-2] != key.shape[-2]:
        raise ValueError(f"mismatched shapes {tuple(query.shape)}, {tuple(key.shape)}, "
                         f"{tuple(value.shape)}")
    dt = query.dtype
    work = torch.float32 if dt in (torch.float16, torch.bfloat16) else dt
    q, k, v = (t.to(work) for t in (query, key, value))
    L, S = q.shape[-2], k.shape[-2]
    if is_causal:
        attn_mask = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
    m = attn_mask
    if m is not None:
        try:
            torch.broadcast_shapes(m.shape, (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), L, S))
        except RuntimeError:
            raise ValueError(f"attn_mask of shape {tuple(m.shape)} does not broadcast") from None
        m = torch.where(m, 0.0, float("-inf")).to(work) if m.dtype == torch.bool else m.to(work)
    out = torch.ops.aten._scaled_dot_product_attention_math(q, k, v, m)[0]
    return torch.nan_to_num(out, nan=0.0).to(dt)
