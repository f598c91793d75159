"""Wrong: a pre-norm block without its residual connections (x = Sublayer(LN(x))).

Without the residual path the block forgets its input; this tiny task still trains, but
the outputs are not those of a Transformer block.

fails: test_block_matches_reference, test_model_matches_reference
hint: check the residual connections
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
        x = self.dropout(self.self_attn(self.norm1(x), is_causal=is_causal))
        x = self.dropout(self.linear2(torch.relu(self.linear1(self.norm2(x)))))
        return x
