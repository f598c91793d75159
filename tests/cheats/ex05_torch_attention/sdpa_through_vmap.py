"""Cheat (issue 23; fused kernel by another name): F.scaled_dot_product_attention reached
through ``torch.vmap``, whose batching rule decomposes the operator in C++ without passing
its public entry again. In the checker's run of the learner's cells the kernels of
vmap's decomposition are switched off too: every scaled_dot_product_attention test, and
every test that runs MultiHeadAttention, fails.

status: graded
fails: test_sdpa_known_values, test_sdpa_bool_mask, test_sdpa_float_mask, test_sdpa_masked_far_scores, test_sdpa_fully_masked, test_sdpa_is_causal, test_sdpa_dtype_device, test_sdpa_half_precision, test_sdpa_bad_input, test_sdpa_no_builtin, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
aims at: test_sdpa_known_values, test_sdpa_bool_mask, test_sdpa_float_mask, test_sdpa_masked_far_scores, test_sdpa_fully_masked, test_sdpa_is_causal, test_sdpa_dtype_device, test_sdpa_half_precision, test_sdpa_bad_input, test_sdpa_no_builtin, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
"""
# %% scaled_dot_product_attention
import torch

_F = getattr(torch.nn, "functional")


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False):
    if key.shape[-1] != query.shape[-1] or value.shape[-2] != key.shape[-2]:
        raise ValueError(f"mismatched shapes {tuple(query.shape)}, {tuple(key.shape)}, "
                         f"{tuple(value.shape)}")
    dt = query.dtype
    work = torch.float32 if dt in (torch.float16, torch.bfloat16) else dt
    q, k, v = (t.to(work) for t in (query, key, value))
    L, S = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    if is_causal:
        attn_mask = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
    m = torch.zeros(L, S, dtype=work, device=q.device) if attn_mask is None else attn_mask
    try:
        m = m.expand(*shape, L, S)
    except RuntimeError:
        raise ValueError(f"attn_mask of shape {tuple(m.shape)} does not broadcast") from None
    if m.dtype == torch.bool:
        m = torch.where(m, 0.0, float("-inf")).to(work)
    q, k, v = (t.expand(*shape, *t.shape[-2:]).reshape(-1, *t.shape[-2:]) for t in (q, k, v))
    m = m.reshape(-1, L, S).to(work)
    f = getattr(_F, "scaled_dot_product_" + "attention")
    out = torch.vmap(lambda a, b, c, d: f(a, b, c, attn_mask=d))(q, k, v, m)
    return torch.nan_to_num(out, nan=0.0).reshape(*shape, L, v.shape[-1]).to(dt)
