"""Wrong: correct values, but computed with NumPy in an exercise that is pure Python.

fails: test_pure_python
"""
# %% scaled_dot_product_attention
import numpy as np


def scaled_dot_product_attention(Q, K, V):
    if not Q or not K or not V or any(not r for r in Q + K + V):
        raise ValueError("empty input")
    for name, M in (("Q", Q), ("K", K), ("V", V)):
        if len({len(r) for r in M}) != 1:
            raise ValueError(f"{name} is ragged")
    if len(Q[0]) != len(K[0]) or len(K) != len(V):
        raise ValueError("shapes do not match")
    q, k, v = np.array(Q, float), np.array(K, float), np.array(V, float)
    s = q @ k.T / np.sqrt(q.shape[1])
    w = np.exp(s - s.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    return (w @ v).tolist()
