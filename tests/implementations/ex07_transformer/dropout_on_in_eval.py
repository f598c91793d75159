"""Wrong: uses torch.nn.functional.dropout, whose `training` argument defaults to True.

Dropout then stays on after model.eval(): outputs in eval mode are random.

fails: test_eval_mode_deterministic
"""
# %% transformer_block
import torch.nn.functional as F


class TransformerBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.1):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.p = dropout

    def forward(self, x, is_causal=False):
        x = x + F.dropout(self.self_attn(self.norm1(x), is_causal=is_causal), self.p)
        x = x + F.dropout(self.linear2(F.relu(self.linear1(self.norm2(x)))), self.p)
        return x
