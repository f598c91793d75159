"""Wrong: divides by np.sqrt(d_k), a float64 scalar, so float32 inputs come back as float64.

fails: test_attention_dtype
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    if Q.ndim < 2 or K.ndim < 2 or V.ndim < 2:
        raise ValueError("Q, K, V need shape (..., T, d)")
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(np.float64(Q.shape[-1]))
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    return weights @ V, weights
