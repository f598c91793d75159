"""Planted copy of correct_integer_friendly (tests/implementations): every variable and
helper renamed, comments added, blank lines and spacing changed, error texts reworded.

fails: none
copy of: correct_integer_friendly
"""
# %% softmax
def softmax(row):
    # convert everything to floats first
    vals = [float(item) for item in row]
    if not vals:
        raise ValueError("an empty row has no softmax")

    mx = max(vals)   # shift by the max for stability
    ex = [math.exp(v - mx) for v in vals]
    norm = math.fsum(ex)
    return [item / norm for item in ex]
# %% scaled_dot_product_attention
def _shape_of(label, mat):
    # rows and columns, or an error
    if not mat:
        raise ValueError(f"matrix {label} is empty")
    lens = set(map(len, mat))
    if len(lens) != 1 or 0 in lens:
        raise ValueError(f"matrix {label} is ragged: {sorted(lens)}")
    return len(mat), lens.pop()

def _inner(u, w):
    return math.fsum(p * r for p, r in zip(u, w))

def scaled_dot_product_attention(Q, K, V):
    (nq, dq), (nk, dk), (nv, dv) = _shape_of("Q", Q), _shape_of("K", K), _shape_of("V", V)
    if dq != dk or nk != nv:
        raise ValueError(f"bad shapes {nq}x{dq} {nk}x{dk} {nv}x{dv}")
    res = []
    for qrow in Q:
        # attention weights of this query
        att = softmax([_inner(qrow, krow) / math.sqrt(dq) for krow in K])
        res.append([math.fsum(att[i] * V[i][col] for i in range(nk)) for col in range(dv)])
    return res
