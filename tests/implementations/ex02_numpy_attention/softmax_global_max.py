"""Wrong: subtracts the maximum of the whole array, not of each slice along the axis.

fails: test_softmax_stable
"""
# %% softmax
def softmax(x, axis=-1):
    x = np.asarray(x)
    finite = x[np.isfinite(x)]
    e = np.exp(x - (finite.max() if finite.size else 0))
    total = np.sum(e, axis=axis, keepdims=True)
    return e / np.where(total > 0, total, 1)
