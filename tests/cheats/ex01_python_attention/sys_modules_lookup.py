"""Cheat (sys.modules): the reference looked up in ``sys.modules`` by name.

status: tampering
fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_pure_python, test_kc1, test_kc2, test_kc3
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    import sys

    mod = sys.modules["autograder.reference.python_attention"]
    return mod.scaled_dot_product_attention(Q, K, V)
