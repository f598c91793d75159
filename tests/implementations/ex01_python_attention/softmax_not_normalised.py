"""Wrong: forgets to divide by the sum, so the weights do not sum to 1.

fails: test_softmax_known_values, test_softmax_stable, test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable
"""
# %% softmax
def softmax(row):
    if not row:
        raise ValueError("empty row")
    m = max(row)
    return [math.exp(x - m) for x in row]
