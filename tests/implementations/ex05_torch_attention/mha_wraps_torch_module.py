"""Wrong: runs torch.nn.functional.multi_head_attention_forward on its own weights (forbidden).

fails: test_mha_defaults, test_mha_fully_masked, test_mha_is_causal, test_mha_masks, test_mha_matches_torch, test_mha_no_builtin, test_mha_permutation
"""
# %% MultiHeadAttention
import torch.nn.functional as F


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
        if is_causal:
            attn_mask = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
        if attn_mask is not None:
            if attn_mask.dim() == 4:
                attn_mask = attn_mask.expand(B, self.num_heads, L, S).reshape(B * self.num_heads, L, S)
            if attn_mask.dtype == torch.bool:
                attn_mask = ~attn_mask
        bias = self.q_proj.bias
        in_bias = None if bias is None else torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])
        out, _ = F.multi_head_attention_forward(
            query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1), self.d_model,
            self.num_heads, None, in_bias, None, None, False, 0.0, self.out_proj.weight,
            self.out_proj.bias, training=False, need_weights=False, attn_mask=attn_mask,
            use_separate_proj_weight=True, q_proj_weight=self.q_proj.weight,
            k_proj_weight=self.k_proj.weight, v_proj_weight=self.v_proj.weight)
        return out.transpose(0, 1)
