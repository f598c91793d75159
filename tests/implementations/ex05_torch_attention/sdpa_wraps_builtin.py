"""Wrong: delegates to torch.nn.functional.scaled_dot_product_attention (forbidden).

fails: test_mha_defaults, test_mha_fully_masked, test_mha_is_causal, test_mha_masks, test_mha_matches_torch, test_mha_no_builtin, test_mha_permutation, test_sdpa_bad_input, test_sdpa_bool_mask, test_sdpa_dtype_device, test_sdpa_float_mask, test_sdpa_fully_masked, test_sdpa_half_precision, test_sdpa_is_causal, test_sdpa_known_values, test_sdpa_masked_far_scores, test_sdpa_no_builtin
"""
# %% scaled_dot_product_attention
import torch.nn.functional as F


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False):
    if key.shape[-1] != query.shape[-1] or value.shape[-2] != key.shape[-2]:
        raise ValueError("shapes do not match")
    dtype = query.dtype
    out = F.scaled_dot_product_attention(query.float(), key.float(), value.float(),
                                         attn_mask=attn_mask, is_causal=is_causal)
    return out.to(dtype)
