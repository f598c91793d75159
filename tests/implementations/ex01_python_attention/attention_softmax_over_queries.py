"""Wrong: normalises each column of scores (over the queries) instead of each row.

fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable
hint: softmax taken over the queries
hint: with one query every weight is then 1 and the output is the sum of the values
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
    d_k = len(Q[0])
    scores = [[sum(a * b for a, b in zip(q, k)) / math.sqrt(d_k) for k in K] for q in Q]
    columns = [softmax([scores[i][j] for i in range(len(Q))]) for j in range(len(K))]
    weights = [[columns[j][i] for j in range(len(K))] for i in range(len(Q))]
    return [[sum(w * v[c] for w, v in zip(row, V)) for c in range(len(V[0]))] for row in weights]
