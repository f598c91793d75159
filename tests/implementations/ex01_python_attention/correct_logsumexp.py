"""Correct alternative: softmax through log-sum-exp; attention with zip(*K) transposes.

fails: none
"""
# %% softmax
def softmax(row):
    if len(row) == 0:
        raise ValueError("softmax of an empty row is undefined")
    m = max(row)
    lse = m + math.log(sum(math.exp(x - m) for x in row))
    return [math.exp(x - lse) for x in row]
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    for name, M in (("Q", Q), ("K", K), ("V", V)):
        if len(M) == 0 or any(len(r) == 0 for r in M):
            raise ValueError(f"{name} is empty")
        if any(len(r) != len(M[0]) for r in M):
            raise ValueError(f"{name} is ragged: row lengths {[len(r) for r in M]}")
    if len(Q[0]) != len(K[0]):
        raise ValueError(f"d_k differs: Q has {len(Q[0])}, K has {len(K[0])}")
    if len(K) != len(V):
        raise ValueError(f"T_k differs: K has {len(K)} rows, V has {len(V)}")
    Kt = list(zip(*K))
    Vt = list(zip(*V))
    c = 1.0 / math.sqrt(len(Q[0]))
    rows = []
    for q in Q:
        scores = [c * sum(qi * kij for qi, kij in zip(q, col)) for col in zip(*Kt)]
        w = softmax(scores)
        rows.append([float(sum(wj * vj for wj, vj in zip(w, vcol))) for vcol in Vt])
    return rows
