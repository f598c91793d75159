"""Wrong: divides the scores by d_k instead of sqrt(d_k).

fails: test_attention_worked_example, test_attention_batched, test_attention_mask, test_attention_causal, test_attention_mask_far_scores, test_attention_fully_masked, test_attention_dtype, test_attention_stable
hint: divided by d_k instead of sqrt(d_k)
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    if Q.ndim < 2 or K.ndim < 2 or V.ndim < 2:
        raise ValueError("Q, K, V need shape (..., T, d)")
    scores = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    return weights @ V, weights
