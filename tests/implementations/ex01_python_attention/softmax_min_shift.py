"""Wrong: subtracts the minimum instead of the maximum; large spreads still overflow.

fails: test_softmax_stable, test_attention_stable
hint: subtract the row's maximum score from every score before exp
"""
# %% softmax
def softmax(row):
    if not row:
        raise ValueError("empty row")
    m = min(row)
    exps = [math.exp(x - m) for x in row]
    total = sum(exps)
    return [e / total for e in exps]
