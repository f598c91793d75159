"""Wrong: no input checks; zip silently truncates ragged rows instead of raising ValueError.

fails: test_attention_bad_input
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    scale = 1 / math.sqrt(len(Q[0])) if Q and Q[0] else 1.0
    out = []
    for q in Q:
        w = softmax([sum(a * b for a, b in zip(q, k)) * scale for k in K])
        out.append([sum(wj * v[c] for wj, v in zip(w, V)) for c in range(len(V[0]))])
    return out
