"""Correct alternative: pre-norm block with sub-layer helpers, and a different training loop.

The training uses AdamW with a constant learning rate after warm-up and
stops early once a validation batch is reversed exactly, or at 80% of the time budget.
It changes the global number of torch threads (to 1) and leaves it so.

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
        self.attn_dropout = nn.Dropout(dropout)
        self.ff_dropout = nn.Dropout(dropout)

    def attention(self, x, is_causal):
        return self.attn_dropout(self.self_attn(x, is_causal=is_causal))

    def feed_forward(self, x):
        return self.ff_dropout(self.linear2(self.linear1(x).clamp(min=0)))

    def forward(self, x, is_causal=False):
        x = x + self.attention(self.norm1(x), is_causal)
        return x + self.feed_forward(self.norm2(x))
# %% train_tiny_transformer
def train_tiny_transformer(time_budget_s=TIME_BUDGET_S, seed=0):
    torch.manual_seed(seed)
    model = TinyTransformer(VOCAB_SIZE, d_model=32, num_heads=4, num_layers=2, d_ff=64,
                            max_len=2 * N_DIGITS + 1, dropout=0.0)
    gen = torch.Generator().manual_seed(seed + 1)
    validation = random_digits(256, N_DIGITS, torch.Generator().manual_seed(seed + 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.01)
    deadline = time.perf_counter() + 0.8 * time_budget_s
    torch.set_num_threads(1)
    for step in range(1000):
        for group in optimizer.param_groups:
            group["lr"] = 5e-3 * min(1.0, (step + 1) / 20)
        model.train()
        seq = reversal_sequences(random_digits(128, N_DIGITS, gen))
        logits = model(seq[:, :-1])
        loss = nn.functional.cross_entropy(logits[:, N_DIGITS:].flatten(0, 1),
                                           seq[:, N_DIGITS + 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 25 == 24 and reversal_accuracy(model, validation) == 1.0:
            print(f"validation batch reversed exactly after {step + 1} steps")
            break
        if time.perf_counter() > deadline:
            break
    return model.eval()
