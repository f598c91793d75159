"""Correct alternative, unusual on purpose (issue 23): the block keeps a persistent buffer
(a call counter the checker never loads) and a forward hook on linear1 that only counts,
wraps ``__call__`` with an override that calls torch's, and computes its feed-forward
network with ``einsum`` on linear1's and linear2's weights; the model computes its
positional encodings in forward (no buffer), indexes its ModuleList, and trains in a
worker thread. Built, loaded with the checker's parameters, run and probed by command, it
keeps full marks.

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
        self.drop = nn.ModuleDict({"attn": nn.Dropout(dropout), "ffn": nn.Dropout(dropout)})
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))
        self.linear1.register_forward_hook(lambda module, args, output: None)

    def __call__(self, x, *args, **kwargs):
        self.calls += 1
        return super().__call__(x, *args, **kwargs)

    def forward(self, x, is_causal=False):
        x = x + self.drop["attn"](self.self_attn(self.norm1(x), is_causal=is_causal))
        h = torch.relu(torch.einsum("btd,fd->btf", self.norm2(x), self.linear1.weight)
                       + self.linear1.bias)
        h = torch.einsum("btf,df->btd", h, self.linear2.weight) + self.linear2.bias
        return x + self.drop["ffn"](h)
# %% tiny_transformer
class TinyTransformer(nn.Module):
    def __init__(self, vocab_size, d_model, num_heads, num_layers, d_ff, max_len, dropout=0.1):
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.embedding = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embedding.weight, std=d_model ** -0.5)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            [TransformerBlock(d_model, num_heads, d_ff, dropout) for _ in range(num_layers)])
        self.norm = nn.LayerNorm(d_model)
        self.out_proj = nn.Linear(d_model, vocab_size)

    def forward(self, tokens):
        T = tokens.shape[1]
        pe = positional_encoding(T, self.d_model).to(self.embedding.weight)
        x = self.dropout(self.embedding(tokens) * math.sqrt(self.d_model) + pe)
        for i in range(len(self.blocks)):
            x = self.blocks[i](x, is_causal=True)
        return self.out_proj(self.norm(x))
# %% train_tiny_transformer
def train_tiny_transformer(time_budget_s=TIME_BUDGET_S, seed=0):
    import threading

    result = {}

    def work():
        torch.manual_seed(seed)
        model = TinyTransformer(VOCAB_SIZE, d_model=32, num_heads=4, num_layers=2, d_ff=64,
                                max_len=2 * N_DIGITS + 1, dropout=0.0)
        generator = torch.Generator().manual_seed(seed)
        steps, warmup = 150, 15
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.9, 0.98))
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: min((s + 1) / warmup, (steps - s) / (steps - warmup)))
        start = time.perf_counter()
        model.train()
        with torch.enable_grad():
            for _ in range(steps):
                seq = reversal_sequences(random_digits(128, N_DIGITS, generator))
                logits = model(seq[:, :-1])[:, N_DIGITS:]
                loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB_SIZE),
                                                   seq[:, N_DIGITS + 1:].reshape(-1))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                schedule.step()
                if time.perf_counter() - start > 0.9 * time_budget_s:
                    break
        result["model"] = model.eval()

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        worker = threading.Thread(target=work)
        worker.start()
        worker.join()
    finally:
        torch.set_num_threads(threads)
    return result["model"]
