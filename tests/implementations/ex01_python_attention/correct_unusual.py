"""Correct, written unusually (issue 23): a worker thread computes each output row, a
generator yields the scores, results are cached by input, a harmless SIGALRM handler is
installed and an atexit hook registered. Nothing of this reaches the checker: full marks.

fails: none
"""
# %% softmax
import atexit
import signal
import threading

signal.signal(signal.SIGALRM, lambda signum, frame: None)
atexit.register(lambda: None)
_cache = {}


def softmax(row):
    if len(row) == 0:
        raise ValueError("softmax of an empty row is undefined")
    key = tuple(row)
    if key not in _cache:
        m = max(row)
        exps = [math.exp(x - m) for x in row]
        total = math.fsum(exps)
        _cache[key] = [e / total for e in exps]
    return list(_cache[key])
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    for name, M in (("Q", Q), ("K", K), ("V", V)):
        if len(M) == 0 or any(len(r) == 0 for r in M) or len({len(r) for r in M}) != 1:
            raise ValueError(f"{name} must be a non-empty rectangular list of lists")
    if len(Q[0]) != len(K[0]) or len(K) != len(V):
        raise ValueError("Q and K need the same d_k, K and V the same T_k")
    scale = 1.0 / math.sqrt(len(Q[0]))

    def scores(q):
        for k in K:
            yield sum(a * b for a, b in zip(q, k)) * scale

    out = [None] * len(Q)

    def row(i):
        w = softmax(list(scores(Q[i])))
        out[i] = [sum(wj * v[c] for wj, v in zip(w, V)) for c in range(len(V[0]))]

    threads = [threading.Thread(target=row, args=(i,)) for i in range(len(Q))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out
