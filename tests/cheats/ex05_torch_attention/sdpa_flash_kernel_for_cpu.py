"""Cheat (issue 23; fused kernel by another name): the CPU flash-attention operator
``torch.ops.aten._scaled_dot_product_flash_attention_for_cpu``, reached by a built name
(value padded to the query's head size, masks made additive, empty rows zeroed), so the
values are right in the kernel. The trusted checker cannot see how the kernel computed
them; every ex05 test first has the learner's cells run again in a Python where every
kernel of torch's attention operators is switched off in the dispatcher: there this
function raises, so every test of scaled_dot_product_attention fails, and so does every
test that runs MultiHeadAttention (it attends through this function).

status: graded
fails: test_sdpa_known_values, test_sdpa_bool_mask, test_sdpa_float_mask, test_sdpa_masked_far_scores, test_sdpa_fully_masked, test_sdpa_is_causal, test_sdpa_dtype_device, test_sdpa_half_precision, test_sdpa_bad_input, test_sdpa_no_builtin, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
aims at: test_sdpa_known_values, test_sdpa_bool_mask, test_sdpa_float_mask, test_sdpa_masked_far_scores, test_sdpa_fully_masked, test_sdpa_is_causal, test_sdpa_dtype_device, test_sdpa_half_precision, test_sdpa_bad_input, test_sdpa_no_builtin, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
"""
# %% scaled_dot_product_attention
import torch

_FLASH = getattr(torch.ops.aten, "_scaled_dot_product_flash_" + "attention_for_cpu")


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False):
    if key.shape[-1] != query.shape[-1] or value.shape[-2] != key.shape[-2]:
        raise ValueError(f"mismatched shapes {tuple(query.shape)}, {tuple(key.shape)}, "
                         f"{tuple(value.shape)}")
    dt, E, Ev = query.dtype, query.shape[-1], value.shape[-1]
    work = torch.float32 if dt in (torch.float16, torch.bfloat16) else dt
    q, k, v = (t.to(work) for t in (query, key, value))
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    q, k, v = (t.expand(*shape, *t.shape[-2:]).reshape(-1, 1, *t.shape[-2:]) for t in (q, k, v))
    size = max(E, Ev)
    q, k = (torch.nn.functional.pad(t, (0, size - E)) for t in (q, k))
    v = torch.nn.functional.pad(v, (0, size - Ev))
    L, S = q.shape[-2], k.shape[-2]
    if is_causal:
        attn_mask = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
    m = None
    if attn_mask is not None:
        try:
            full = torch.broadcast_shapes(attn_mask.shape, (*shape, L, S))
        except RuntimeError:
            raise ValueError(f"attn_mask of shape {tuple(attn_mask.shape)} does not broadcast") from None
        m = attn_mask.expand(full).reshape(-1, 1, L, S)
        m = torch.where(m, 0.0, float("-inf")).to(work) if m.dtype == torch.bool else m.to(work)
    out = _FLASH(q, k, v, attn_mask=m, scale=E ** -0.5)[0][..., :Ev]
    return torch.nan_to_num(out, nan=0.0).reshape(*shape, L, Ev).to(dt)
