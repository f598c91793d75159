"""Wrong (case 005): divides the queries by sqrt(num_heads) before attending, so the scores
are scaled as if by sqrt(d_model) instead of sqrt(d_k); the rest is right.

fails: test_mha_fully_masked, test_mha_is_causal, test_mha_masks, test_mha_matches_torch
hint: scaled by 1/sqrt(d_model) instead of 1/sqrt(d_k)
hint: dividing the queries by sqrt(num_heads) before attending does the same
"""
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):
    """Multi-head attention (Vaswani et al. 2017, 3.2.2), batch first: (B, L, d_model) -> (B, L, d_model)."""

    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model = {d_model} is not divisible by num_heads = {num_heads}")
        self.num_heads, self.d_k = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key=None, value=None, attn_mask=None, is_causal=False):
        """query (B, L, d_model), key and value (B, S, d_model), default query -> (B, L, d_model)."""
        key = query if key is None else key
        value = key if value is None else value
        B, L, d_model = query.shape

        def split(x):  # (B, T, d_model) -> (B, num_heads, T, d_k)
            return x.view(B, x.shape[1], self.num_heads, self.d_k).transpose(1, 2)

        Q, K, V = split(self.q_proj(query)), split(self.k_proj(key)), split(self.v_proj(value))
        Q = Q / math.sqrt(self.num_heads)  # 'scale by the model width'
        heads = scaled_dot_product_attention(Q, K, V, attn_mask=attn_mask, is_causal=is_causal)
        return self.out_proj(heads.transpose(1, 2).reshape(B, L, d_model))
