"""Independent correct solution: explicit index loops over rows and columns, the maximum
found by hand, the shapes checked one by one with early returns of the error.

fails: none
"""
# %% softmax
def softmax(row):
    n = len(row)
    if n == 0:
        raise ValueError("cannot take the softmax of an empty row")
    biggest = row[0]
    for i in range(1, n):
        if row[i] > biggest:
            biggest = row[i]
    weights = [0.0] * n
    acc = 0.0
    for i in range(n):
        weights[i] = math.exp(row[i] - biggest)
        acc += weights[i]
    for i in range(n):
        weights[i] /= acc
    return weights
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    problem = None
    for label, M in zip("QKV", (Q, K, V)):
        if len(M) == 0 or len(M[0]) == 0:
            problem = f"{label} is empty"
        elif any(len(r) != len(M[0]) for r in M):
            problem = f"{label} has rows of different lengths"
        if problem:
            raise ValueError(problem)
    if len(K[0]) != len(Q[0]):
        raise ValueError("Q and K must share d_k")
    if len(V) != len(K):
        raise ValueError("K and V must share T_k")
    n_q, n_k, d, d_out = len(Q), len(K), len(Q[0]), len(V[0])
    result = []
    for i in range(n_q):
        logits = []
        for j in range(n_k):
            s = 0.0
            for c in range(d):
                s += Q[i][c] * K[j][c]
            logits.append(s / math.sqrt(d))
        p = softmax(logits)
        line = []
        for c in range(d_out):
            t = 0.0
            for j in range(n_k):
                t += p[j] * V[j][c]
            line.append(t)
        result.append(line)
    return result
