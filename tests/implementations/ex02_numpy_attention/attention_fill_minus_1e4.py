"""Wrong: masked scores are set to -1e4, which real scores can be below; fully masked rows zeroed.

fails: test_attention_mask_far_scores
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    if Q.ndim < 2 or K.ndim < 2 or V.ndim < 2:
        raise ValueError("Q, K, V need shape (..., T, d)")
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    if mask is None:
        weights = softmax(scores, axis=-1)
    else:
        weights = softmax(np.where(mask, scores, -1e4), axis=-1)
        weights = np.where(np.any(mask, axis=-1, keepdims=True), weights, 0)
    return weights @ V, weights
