"""Planted copy of correct_logsumexp (tests/implementations): reformatted (other line
breaks, spacing, parentheses), renamed, its checks in another order, comments changed.

fails: none
copy of: correct_logsumexp
"""
# %% softmax
def softmax( row ):
    # log-sum-exp trick
    if len( row ) == 0 :
        raise ValueError( "empty" )
    mu = max( row )
    log_z = mu + math.log( sum( math.exp( v - mu ) for v in row ) )
    return [ math.exp( v - log_z ) for v in row ]
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    for nm, A in (("Q", Q), ("K", K), ("V", V)):
        if len(A) == 0 or any(len(r) == 0 for r in A):
            raise ValueError(f"{nm} empty")
        if any(len(r) != len(A[0]) for r in A):
            raise ValueError(f"{nm} ragged {[len(r) for r in A]}")
    if len(K) != len(V):
        raise ValueError(f"K {len(K)} rows, V {len(V)}")
    if len(Q[0]) != len(K[0]):
        raise ValueError(f"Q {len(Q[0])}, K {len(K[0])}")
    KT = list(zip(*K)); VT = list(zip(*V))
    factor = 1.0 / math.sqrt(len(Q[0]))
    out = []
    for qv in Q:
        sc = [factor * sum(a * b for a, b in zip(qv, kc)) for kc in zip(*KT)]
        p = softmax(sc)
        out.append([float(sum(pj * vj for pj, vj in zip(p, vc))) for vc in VT])
    return out
