"""Cheat (import): the reference module imported in the solution cell, used if it loaded.

status: graded
fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_pure_python
"""
# %% scaled_dot_product_attention
try:
    import autograder.reference.python_attention as _r
except ImportError:
    _r = None


def scaled_dot_product_attention(Q, K, V):
    return _r.scaled_dot_product_attention(Q, K, V)
