"""Cheat (sys.modules): the reference looked up in ``sys.modules`` by name.

status: graded
fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_pure_python
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    import sys

    mod = sys.modules["autograder.reference.python_attention"]
    return mod.scaled_dot_product_attention(Q, K, V)
