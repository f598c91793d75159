"""Independent correct solution: functional style with functools.reduce, map and
operator.mul; every check is one assertion-like expression turned into a ValueError.

fails: none
"""
# %% softmax
import functools
import operator


def softmax(row):
    row = list(map(float, row))
    if row == []:
        raise ValueError("softmax: no scores")
    peak = functools.reduce(lambda a, b: a if a >= b else b, row)
    terms = list(map(lambda x: math.exp(x - peak), row))
    denom = functools.reduce(operator.add, terms, 0.0)
    return list(map(lambda t: t / denom, terms))
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    def rectangular(M):
        return bool(M) and bool(M[0]) and all(len(r) == len(M[0]) for r in M)

    bad = [name for name, M in (("Q", Q), ("K", K), ("V", V)) if not rectangular(M)]
    if bad:
        raise ValueError("not a non-empty rectangular matrix: " + ", ".join(bad))
    if len(Q[0]) != len(K[0]) or len(K) != len(V):
        raise ValueError("Q, K, V shapes are incompatible")
    inv = 1 / math.sqrt(len(Q[0]))
    dot = lambda u, w: functools.reduce(operator.add, map(operator.mul, u, w), 0.0)
    attend = lambda q: softmax([dot(q, k) * inv for k in K])
    cols = list(zip(*V))
    return [[dot(p, col) for col in cols] for p in map(attend, Q)]
