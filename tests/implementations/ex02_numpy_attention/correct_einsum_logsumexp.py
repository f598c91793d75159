"""Correct alternative: log-sum-exp softmax, einsum, nan_to_num for fully masked rows.

fails: none
"""
# %% softmax
def softmax(x, axis=-1):
    x = np.asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        lse = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
        p = np.exp(x - lse)
    return np.nan_to_num(p, nan=0.0)
# %% causal_mask
def causal_mask(T):
    if type(T) is not int or T <= 0:
        raise ValueError(f"causal_mask needs a positive int T, got {T!r}")
    i = np.arange(T)
    return i[:, None] >= i[None, :]
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a) for a in (Q, K, V))
    if min(Q.ndim, K.ndim, V.ndim) < 2:
        raise ValueError(f"need at least 2-D Q, K, V: {Q.shape}, {K.shape}, {V.shape}")
    if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
        raise ValueError(f"incompatible shapes Q {Q.shape}, K {K.shape}, V {V.shape}")
    dtype = np.result_type(Q, K, V)
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    Qb = np.broadcast_to(Q, (*batch, *Q.shape[-2:]))
    Kb = np.broadcast_to(K, (*batch, *K.shape[-2:]))
    scores = np.einsum("...qd,...kd->...qk", Qb, Kb) * dtype.type(1 / math.sqrt(Q.shape[-1]))
    if mask is not None:
        mask = np.asarray(mask)
        target = scores.shape
        if mask.ndim > len(target) or any(m not in (1, t) for m, t in zip(mask.shape[::-1], target[::-1])):
            raise ValueError(f"mask {mask.shape} does not fit scores {target}")
        scores = np.where(mask, scores, dtype.type(-np.inf))
    weights = softmax(scores)
    return weights @ V, weights
