"""Cheat (sys.modules): every loaded module searched for a function of the graded name.

status: graded
fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    import sys

    for name, mod in list(sys.modules.items()):
        if name.startswith("autograder") and name != __name__:
            f = getattr(mod, "scaled_dot_product_attention", None)
            if callable(f) and f is not scaled_dot_product_attention:
                return f(Q, K, V)
    return [[0.0] * len(V[0]) for _ in Q]
