"""Wrong: divides the scores by E (d_k) instead of sqrt(E).

fails: test_mha_fully_masked, test_mha_is_causal, test_mha_masks, test_mha_matches_torch, test_sdpa_bool_mask, test_sdpa_dtype_device, test_sdpa_float_mask, test_sdpa_fully_masked, test_sdpa_half_precision, test_sdpa_is_causal, test_sdpa_known_values, test_sdpa_masked_far_scores
hint: divided by d_k instead of sqrt(d_k)
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False):
    L, E = query.shape[-2:]
    S = key.shape[-2]
    if key.shape[-1] != E or value.shape[-2] != S:
        raise ValueError(f"shapes do not match: {tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}")
    if attn_mask is not None:
        try:
            torch.broadcast_shapes(attn_mask.shape, (*query.shape[:-2], L, S))
        except RuntimeError:
            raise ValueError(f"attn_mask {tuple(attn_mask.shape)} does not fit ({L}, {S})") from None
    dtype = query.dtype
    if dtype in (torch.float16, torch.bfloat16):
        query, key, value = query.float(), key.float(), value.float()
    scores = query @ key.transpose(-2, -1) / E
    if is_causal:
        attn_mask = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask.to(scores.dtype)
    weights = torch.softmax(scores, dim=-1)
    weights = torch.nan_to_num(weights, nan=0.0)
    return (weights @ value).to(dtype)
