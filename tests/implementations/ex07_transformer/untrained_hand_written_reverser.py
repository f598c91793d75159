"""Wrong on purpose (found by the adversarial review): the block and the model are right,
but train_tiny_transformer trains nothing and returns a one-parameter module written to put
the reversal into its logits. The accuracy test judges that the returned model is one of
the learner's TinyTransformers (a fresh one of its sizes, loaded with its parameters,
computes the same logits), so it loses the accuracy test; it returns within the budget.

fails: test_trained_accuracy
"""
# %% train_tiny_transformer
class _Reverser(nn.Module):
    def __init__(self):
        super().__init__()
        self.dummy = nn.Parameter(torch.zeros(1))
    def forward(self, tokens):
        B, T = tokens.shape
        logits = torch.zeros(B, T, VOCAB_SIZE)
        for t in range(T):
            src = 2 * N_DIGITS - 1 - t
            if t >= N_DIGITS and 0 <= src < t + 1:
                logits[torch.arange(B), t, tokens[:, src]] = 10.0
        return logits + 0 * self.dummy

def train_tiny_transformer(time_budget_s=TIME_BUDGET_S, seed=0):
    return _Reverser().eval()
