"""Correct alternative: finite fill with the dtype's minimum plus a zeroing of rows with no key;
multi-head attention as a loop over heads, slicing the projections.

fails: none
"""
# %% scaled_dot_product_attention
def _as_bool_and_bias(attn_mask, is_causal, L, S, device):
    if is_causal:
        return torch.ones(L, S, dtype=torch.bool, device=device).tril(), None
    if attn_mask is None:
        return None, None
    if attn_mask.dtype == torch.bool:
        return attn_mask, None
    return torch.isfinite(attn_mask) | (attn_mask > 0), attn_mask


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False):
    *_, L, E = query.shape
    S, E_k = key.shape[-2:]
    if E_k != E:
        raise ValueError(f"query last dim {E} != key last dim {E_k}")
    if value.shape[-2] != S:
        raise ValueError(f"key has {S} positions, value has {value.shape[-2]}")
    if attn_mask is not None and (attn_mask.dim() < 2 or any(
            m not in (1, t) for m, t in zip(attn_mask.shape[::-1], (S, L, *query.shape[-3::-1])))):
        raise ValueError(f"attn_mask {tuple(attn_mask.shape)} cannot broadcast to (..., {L}, {S})")
    work = torch.float32 if query.dtype in (torch.float16, torch.bfloat16) else query.dtype
    q, k, v = query.to(work), key.to(work), value.to(work)
    scores = torch.matmul(q * (E ** -0.5), k.transpose(-1, -2))
    allowed, bias = _as_bool_and_bias(attn_mask, is_causal, L, S, query.device)
    if bias is not None:
        scores = scores + bias.to(work).nan_to_num(neginf=0.0)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, torch.finfo(work).min)
    weights = torch.softmax(scores, dim=-1)
    if allowed is not None:
        weights = weights * allowed.any(dim=-1, keepdim=True) * allowed
    return torch.matmul(weights, v).to(query.dtype)
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        if num_heads <= 0 or d_model % num_heads != 0:
            raise ValueError(f"cannot split d_model={d_model} into {num_heads} heads")
        self.h = num_heads
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (
            nn.Linear(d_model, d_model, bias=bias) for _ in range(4))

    def forward(self, query, key=None, value=None, attn_mask=None, is_causal=False):
        if key is None:
            key = query
        if value is None:
            value = query if key is query else key
        d_k = query.shape[-1] // self.h
        Q, K, V = self.q_proj(query), self.k_proj(key), self.v_proj(value)
        heads = []
        for i in range(self.h):
            part = slice(i * d_k, (i + 1) * d_k)
            mask_i = attn_mask
            if attn_mask is not None and attn_mask.dim() == 4:
                mask_i = attn_mask[:, i if attn_mask.shape[1] > 1 else 0]
            heads.append(scaled_dot_product_attention(Q[..., part], K[..., part], V[..., part],
                                                      attn_mask=mask_i, is_causal=is_causal))
        return self.out_proj(torch.cat(heads, dim=-1))
