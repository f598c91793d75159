"""Correct alternative: fills masked scores with the dtype's most negative finite number
and zeroes rows that have no key to attend to.

fails: none
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    if Q.ndim < 2 or K.ndim < 2 or V.ndim < 2:
        raise ValueError(f"expected (..., T, d) arrays, got {Q.shape}, {K.shape}, {V.shape}")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"d_k differs: Q {Q.shape}, K {K.shape}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"T_k differs: K {K.shape}, V {V.shape}")
    scores = np.matmul(Q, np.swapaxes(K, -1, -2))
    scores = scores / np.asarray(math.sqrt(Q.shape[-1]), dtype=scores.dtype)
    if mask is None:
        return softmax(scores) @ V, softmax(scores)
    mask = np.asarray(mask, dtype=bool)
    try:
        mask_full = np.broadcast_to(mask, np.broadcast_shapes(mask.shape, scores.shape))
    except ValueError as exc:
        raise ValueError(f"mask {mask.shape} vs scores {scores.shape}: {exc}") from None
    if mask_full.shape[-2:] != scores.shape[-2:]:
        raise ValueError(f"mask {mask.shape} vs scores {scores.shape}")
    filled = np.where(mask_full, scores, np.finfo(scores.dtype).min)
    weights = softmax(filled) * mask_full
    return weights @ V, weights
