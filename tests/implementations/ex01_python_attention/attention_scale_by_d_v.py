"""Wrong: scales the scores by 1/sqrt(d_v), the width of the values, instead of 1/sqrt(d_k).

fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable
hint: 1/sqrt(d_v) instead of 1/sqrt(d_k)
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    if not Q or not K or not V or any(not r for r in Q + K + V):
        raise ValueError("empty input")
    for name, M in (("Q", Q), ("K", K), ("V", V)):
        if len({len(r) for r in M}) != 1:
            raise ValueError(f"{name} is ragged")
    if len(Q[0]) != len(K[0]) or len(K) != len(V):
        raise ValueError("shapes do not match")
    d_v = len(V[0])
    out = []
    for q in Q:
        w = softmax([sum(a * b for a, b in zip(q, k)) / math.sqrt(d_v) for k in K])
        out.append([sum(wj * v[c] for wj, v in zip(w, V)) for c in range(len(V[0]))])
    return out
