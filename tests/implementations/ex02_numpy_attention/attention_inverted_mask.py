"""Wrong: reads the mask as True = masked out (nn.MultiheadAttention's convention).

fails: test_attention_mask, test_attention_causal, test_attention_mask_far_scores, test_attention_fully_masked, test_attention_dtype
hint: True means
hint: key 2 is masked (False), so its weight must be exactly 0. Hint: your weights match attention with the mask's meaning inverted
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    if Q.ndim < 2 or K.ndim < 2 or V.ndim < 2:
        raise ValueError("Q, K, V need shape (..., T, d)")
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    weights = softmax(scores, axis=-1)
    return weights @ V, weights
