"""Wrong: inverts a boolean attn_mask before attending (as if it followed nn.MultiheadAttention).

fails: test_mha_fully_masked, test_mha_masks
hint: meaning inverted: True means the query MAY attend
"""
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model = {d_model} is not divisible by num_heads = {num_heads}")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key=None, value=None, attn_mask=None, is_causal=False):
        key = query if key is None else key
        value = key if value is None else value
        if attn_mask is not None and attn_mask.dtype == torch.bool:
            attn_mask = ~attn_mask
        B, L, _ = query.shape
        S = key.shape[1]
        Q = self.q_proj(query).view(B, L, self.num_heads, self.d_k).transpose(1, 2)
        K = self.k_proj(key).view(B, S, self.num_heads, self.d_k).transpose(1, 2)
        V = self.v_proj(value).view(B, S, self.num_heads, self.d_k).transpose(1, 2)
        heads = scaled_dot_product_attention(Q, K, V, attn_mask=attn_mask, is_causal=is_causal)
        return self.out_proj(heads.transpose(1, 2).reshape(B, L, self.d_model))
