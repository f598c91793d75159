"""Independent correct solution: small matrix helpers (transpose, matmul, row-wise map)
and attention written as their composition, as one would on paper.

fails: none
"""
# %% softmax
def _exp_shifted(row):
    top = max(row)
    return [math.exp(v - top) for v in row]


def softmax(row):
    if not len(row):
        raise ValueError("empty row: softmax is undefined")
    ex = _exp_shifted(row)
    norm = sum(ex)
    return [v / norm for v in ex]
# %% scaled_dot_product_attention
def transpose(A):
    return [list(col) for col in zip(*A)]


def matmul(A, B):
    Bt = transpose(B)
    return [[sum(a * b for a, b in zip(r, c)) for c in Bt] for r in A]


def check_matrix(A, label):
    if not A or not A[0]:
        raise ValueError(f"{label}: need at least one non-empty row")
    if len({len(r) for r in A}) > 1:
        raise ValueError(f"{label}: ragged rows")


def scaled_dot_product_attention(Q, K, V):
    check_matrix(Q, "Q")
    check_matrix(K, "K")
    check_matrix(V, "V")
    if len(Q[0]) != len(K[0]) or len(K) != len(V):
        raise ValueError("shapes of Q, K, V do not match")
    scores = matmul(Q, transpose(K))
    root = math.sqrt(len(K[0]))
    probs = [softmax([s / root for s in r]) for r in scores]
    return matmul(probs, V)
