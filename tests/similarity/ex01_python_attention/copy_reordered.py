"""Planted copy of independent_matrix_helpers: the helpers reordered (the check first,
matmul before transpose, the softmax helper after softmax), names changed, comments
rewritten, spacing changed.

fails: none
copy of: independent_matrix_helpers
"""
# %% softmax
def softmax(xs):
    """Softmax, shifted."""
    if not len(xs):
        raise ValueError("softmax of nothing")
    e = _shifted_exps(xs)
    s = sum(e)
    return [y / s for y in e]


def _shifted_exps(xs):
    m = max(xs)
    return [math.exp(y - m) for y in xs]
# %% scaled_dot_product_attention
def validate(M, name):
    if not M or not M[0]:
        raise ValueError(f"{name} must have a non-empty row")
    if len({len(row) for row in M}) > 1:
        raise ValueError(f"{name} is ragged")


def mat_mul(X, Y):
    Yt = trans(Y)
    return [[sum(p * q for p, q in zip(row, col)) for col in Yt] for row in X]


def trans(X):
    return [list(c) for c in zip(*X)]


def scaled_dot_product_attention(Q, K, V):
    # validate the three inputs
    validate(Q, "Q")
    validate(K, "K")
    validate(V, "V")
    if len(Q[0]) != len(K[0]) or len(K) != len(V):
        raise ValueError("incompatible shapes")
    logits = mat_mul(Q, trans(K))
    r = math.sqrt(len(K[0]))
    weights = [softmax([x / r for x in row]) for row in logits]
    return mat_mul(weights, V)
