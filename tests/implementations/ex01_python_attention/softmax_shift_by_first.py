"""Wrong: shifts every score by the FIRST score instead of the maximum (overflows for [0, 1000]).

fails: test_softmax_stable, test_attention_stable
hint: subtract the row's maximum score from every score before exp
"""
# %% softmax
def softmax(row):
    if not row:
        raise ValueError("softmax needs at least one score, got an empty row")
    shift = row[0]  # any constant may be subtracted: softmax(x - c) = softmax(x)
    exps = [math.exp(x - shift) for x in row]
    total = sum(exps)
    return [e / total for e in exps]
