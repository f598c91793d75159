"""Wrong: softmax without subtracting the maximum, so exp overflows for large scores.

fails: test_softmax_stable, test_attention_stable, test_attention_mask_far_scores
"""
# %% softmax
def softmax(x, axis=-1):
    e = np.exp(np.asarray(x))
    total = np.sum(e, axis=axis, keepdims=True)
    return e / np.where(total > 0, total, 1)
