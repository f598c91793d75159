"""Wrong: builds the final LayerNorm but never applies it: the logits are out_proj of the last
block's output. The parameter count is right; the logits are not the specified ones.

fails: test_model_matches_reference
hint: no final LayerNorm before out_proj
"""
# %% tiny_transformer
class TinyTransformer(nn.Module):
    """A decoder-only Transformer: tokens (B, T) -> logits (B, T, vocab_size), causal."""

    def __init__(self, vocab_size, d_model, num_heads, num_layers, d_ff, max_len, dropout=0.1):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embedding.weight, std=d_model ** -0.5)
        self.register_buffer("pe", positional_encoding(max_len, d_model), persistent=False)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, num_heads, d_ff, dropout) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model)
        self.out_proj = nn.Linear(d_model, vocab_size)

    def forward(self, tokens):
        T = tokens.shape[1]
        x = self.dropout(self.embedding(tokens) * math.sqrt(self.d_model) + self.pe[:T])
        for block in self.blocks:
            x = block(x, is_causal=True)
        return self.out_proj(x)  # self.norm built but never applied
