"""Wrong: always normalises over the last axis, whatever axis is asked for.

fails: test_softmax_axis
"""
# %% softmax
def softmax(x, axis=-1):
    x = np.asarray(x)
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(m), m, 0))
    total = np.sum(e, axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1)
