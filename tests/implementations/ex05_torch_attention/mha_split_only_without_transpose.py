"""Wrong: splits heads by reshaping (B, T, d_model) straight to (B, num_heads, T, d_k), without the transpose, then merges them the right way (transpose back, then reshape): tokens are mixed, the future leaks into the past under is_causal, and permuting the tokens does not permute the output.

fails: test_mha_fully_masked, test_mha_is_causal, test_mha_masks, test_mha_matches_torch, test_mha_permutation
hint: the heads split by reshaping (B, T, d_model) straight to (B, num_heads, T, d_k)
hint: with is_causal=True the last token must not change the outputs of earlier tokens. Hint: your output matches multi-head attention with the heads split by reshaping
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
        B, L, _ = query.shape
        S = key.shape[1]
        Q = self.q_proj(query).reshape(B, self.num_heads, L, self.d_k)
        K = self.k_proj(key).reshape(B, self.num_heads, S, self.d_k)
        V = self.v_proj(value).reshape(B, self.num_heads, S, self.d_k)
        heads = scaled_dot_product_attention(Q, K, V, attn_mask=attn_mask, is_causal=is_causal)
        return self.out_proj(heads.transpose(1, 2).reshape(B, L, self.d_model))
