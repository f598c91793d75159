"""Wrong: correct values, but float32 input comes back as float64 (np.float64 arithmetic).

fails: test_softmax_dtype, test_attention_dtype
"""
# %% softmax
def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(m), m, 0))
    total = np.sum(e, axis=axis, keepdims=True)
    return e / np.where(total > 0, total, 1)
