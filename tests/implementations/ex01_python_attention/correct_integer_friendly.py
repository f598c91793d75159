"""Correct alternative: accepts int inputs, validates with sets, helper functions inside the cell.

fails: none
"""
# %% softmax
def softmax(row):
    scores = [float(x) for x in row]
    if not scores:
        raise ValueError("row must contain at least one score")
    top = max(scores)
    e = [math.exp(s - top) for s in scores]
    z = math.fsum(e)
    return [x / z for x in e]
# %% scaled_dot_product_attention
def _dims(name, M):
    if not M:
        raise ValueError(f"{name} has no rows")
    widths = set(map(len, M))
    if len(widths) != 1 or 0 in widths:
        raise ValueError(f"{name} has rows of lengths {sorted(widths)}")
    return len(M), widths.pop()


def _dot(a, b):
    return math.fsum(x * y for x, y in zip(a, b))


def scaled_dot_product_attention(Q, K, V):
    (t_q, d_q), (t_k, d_kk), (t_v, d_v) = _dims("Q", Q), _dims("K", K), _dims("V", V)
    if d_q != d_kk or t_k != t_v:
        raise ValueError(f"incompatible shapes Q {t_q}x{d_q}, K {t_k}x{d_kk}, V {t_v}x{d_v}")
    out = []
    for q in Q:
        w = softmax([_dot(q, k) / math.sqrt(d_q) for k in K])
        out.append([math.fsum(w[j] * V[j][c] for j in range(t_k)) for c in range(d_v)])
    return out
