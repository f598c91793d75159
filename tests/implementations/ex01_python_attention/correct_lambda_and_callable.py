"""Correct (review of the trusted checker): softmax is a lambda and attention an instance
of a class with __call__ and a cache; the probe finds them under the graded names.

fails: none
"""
# %% softmax
softmax = lambda row: (  # noqa: E731
    (_ for _ in ()).throw(ValueError("softmax of an empty row is undefined")) if len(row) == 0
    else [math.exp(x - max(row)) / math.fsum(math.exp(y - max(row)) for y in row) for x in row])
# %% scaled_dot_product_attention
class _Attention:
    def __init__(self):
        self.cache = {}

    def __call__(self, Q, K, V):
        for name, M in (("Q", Q), ("K", K), ("V", V)):
            if len(M) == 0 or any(len(r) == 0 for r in M) or len({len(r) for r in M}) != 1:
                raise ValueError(f"{name} must be a non-empty rectangular list of lists")
        if len(Q[0]) != len(K[0]) or len(K) != len(V):
            raise ValueError("Q and K need the same d_k, K and V the same T_k")
        key = repr((Q, K, V))
        if key not in self.cache:
            scale = 1.0 / math.sqrt(len(Q[0]))
            out = []
            for q in Q:
                w = softmax([sum(a * b for a, b in zip(q, k)) * scale for k in K])
                out.append([sum(wj * v[c] for wj, v in zip(w, V)) for c in range(len(V[0]))])
            self.cache[key] = out
        return [list(r) for r in self.cache[key]]


scaled_dot_product_attention = _Attention()
