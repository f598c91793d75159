"""Wrong: puts each LayerNorm inside its residual branch, x + LN(Sublayer(x)): neither
post-norm LN(x + Sublayer(x)) nor pre-norm x + Sublayer(LN(x)). With sub-layers that output
zero it returns x, so the visible test passes; the hidden check names the mistake.

fails: test_block_matches_reference, test_model_matches_reference
hint: the LayerNorm inside the residual branch
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
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, is_causal=False):
        x = x + self.norm1(self.dropout(self.self_attn(x, is_causal=is_causal)))
        x = x + self.norm2(self.dropout(self.linear2(torch.relu(self.linear1(x)))))
        return x
