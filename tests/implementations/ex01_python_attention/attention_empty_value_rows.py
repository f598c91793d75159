"""Wrong: checks Q and K for empty rows but not V, so V = [[], []] returns [[], []].

fails: test_attention_bad_input
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    for name, M in (("Q", Q), ("K", K), ("V", V)):
        if not M:
            raise ValueError(f"{name} is empty")
        if any(len(r) != len(M[0]) for r in M):
            raise ValueError(f"{name} is ragged: row lengths {[len(r) for r in M]}")
    if not Q[0] or not K[0]:
        raise ValueError("Q and K need at least one column")
    d_k, d_v = len(Q[0]), len(V[0])
    if len(K[0]) != d_k:
        raise ValueError(f"Q has d_k = {d_k} but K has {len(K[0])}")
    if len(K) != len(V):
        raise ValueError(f"K has {len(K)} rows but V has {len(V)}")
    out = []
    for q in Q:
        w = softmax([math.fsum(a * b for a, b in zip(q, k)) / math.sqrt(d_k) for k in K])
        out.append([math.fsum(w[j] * V[j][c] for j in range(len(K))) for c in range(d_v)])
    return out
