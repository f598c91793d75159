"""Wrong: adds the positional encodings after the first block instead of before it.

The first block then sees no positions at all. The tiny task still trains (later blocks get
the positions), but the first block's input and the logits are not the specified ones.

fails: test_positional_encoding_first, test_model_matches_reference
"""
# %% tiny_transformer
class TinyTransformer(nn.Module):
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
        x = self.dropout(self.embedding(tokens) * math.sqrt(self.d_model))
        for i, block in enumerate(self.blocks):
            x = block(x, is_causal=True)
            if i == 0:
                x = x + self.pe[:T]
        return self.out_proj(self.norm(x))
