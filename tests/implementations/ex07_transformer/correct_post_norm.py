"""Correct alternative: the paper's post-norm block, LN(x + Dropout(Sublayer(x))).

fails: none
"""
# %% transformer_block
class TransformerBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.1):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x, is_causal=False):
        x = self.norm1(x + self.dropout1(self.self_attn(x, x, x, is_causal=is_causal)))
        x = self.norm2(x + self.dropout2(self.linear2(nn.functional.relu(self.linear1(x)))))
        return x
