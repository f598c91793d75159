"""Wrong: divides each head's scores by sqrt(d_model) instead of sqrt(d_k) (attention written inline).

fails: test_mha_fully_masked, test_mha_is_causal, test_mha_masks, test_mha_matches_torch
hint: scaled by 1/sqrt(d_model) instead of 1/sqrt(d_k)
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
        Q = self.q_proj(query).view(B, L, self.num_heads, self.d_k).transpose(1, 2)
        K = self.k_proj(key).view(B, S, self.num_heads, self.d_k).transpose(1, 2)
        V = self.v_proj(value).view(B, S, self.num_heads, self.d_k).transpose(1, 2)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_model)
        if is_causal:
            attn_mask = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                scores = scores.masked_fill(~attn_mask, float("-inf"))
            else:
                scores = scores + attn_mask.to(scores.dtype)
        weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
        heads = weights @ V
        return self.out_proj(heads.transpose(1, 2).reshape(B, L, self.d_model))
