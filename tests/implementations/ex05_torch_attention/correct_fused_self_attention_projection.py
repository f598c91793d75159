"""Correct (found by the adversarial review): like ``nn.MultiheadAttention``, self-attention
(``key is query and value is query``) projects Q, K and V with one fused matmul, which
rounds differently from three. It scores full marks only if the checker's one tensor given
three times arrives in the kernel as one tensor (``wire.Arrays.once``), as in the kernel's
own ``forward(x)``.

fails: none
"""
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key=None, value=None, attn_mask=None, is_causal=False):
        key = query if key is None else key
        value = query if value is None else value
        B, L, _ = query.shape
        S = key.shape[1]
        h, d = self.num_heads, self.d_k
        if key is query and value is query:
            W = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])
            bb = None if self.q_proj.bias is None else torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])
            Qf, Kf, Vf = nn.functional.linear(query, W, bb).chunk(3, dim=-1)
        else:
            Qf, Kf, Vf = self.q_proj(query), self.k_proj(key), self.v_proj(value)
        Q = Qf.view(B, L, h, d).transpose(1, 2)
        K = Kf.view(B, S, h, d).transpose(1, 2)
        V = Vf.view(B, S, h, d).transpose(1, 2)
        o = scaled_dot_product_attention(Q, K, V, attn_mask=attn_mask, is_causal=is_causal)
        return self.out_proj(o.transpose(1, 2).reshape(B, L, self.d_model))
