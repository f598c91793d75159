"""Wrong: normalises each feature over the T positions (axis 1) instead of over d_model.

Statistics over the sequence mix every position into every other, so the block is no
longer causal, and the model cannot learn the task (it reads the future in training).

fails: test_block_matches_reference, test_block_causal, test_model_causal, test_model_matches_reference, test_trained_accuracy
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

    @staticmethod
    def _layer_norm(norm, x):
        mean = x.mean(dim=1, keepdim=True)
        var = x.var(dim=1, keepdim=True, unbiased=False)
        return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias

    def forward(self, x, is_causal=False):
        h = self._layer_norm(self.norm1, x)
        x = x + self.dropout(self.self_attn(h, is_causal=is_causal))
        h = self._layer_norm(self.norm2, x)
        return x + self.dropout(self.linear2(torch.relu(self.linear1(h))))
