"""Wrong: softmax without subtracting the maximum, so exp(1000) overflows.

fails: test_softmax_stable, test_attention_stable
hint: subtract the row's maximum score from every score before exp
"""
# %% softmax
def softmax(row):
    if not row:
        raise ValueError("empty row")
    exps = [math.exp(x) for x in row]
    total = sum(exps)
    return [e / total for e in exps]
