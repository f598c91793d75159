"""Wrong: overwrites the caller's list with the weights and returns it (not a new list).

fails: test_softmax_known_values
"""
# %% softmax
def softmax(row):
    if not row:
        raise ValueError("softmax needs at least one score, got an empty row")
    m = max(row)
    for j in range(len(row)):
        row[j] = math.exp(row[j] - m)
    total = sum(row)
    for j in range(len(row)):
        row[j] /= total
    return row
