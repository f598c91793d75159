"""Cheat (importlib): ``__import__`` of the reference through ``builtins``.

status: graded
fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_pure_python
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    mod = __import__("autograder.reference.python_attention", fromlist=["x"])
    return mod.scaled_dot_product_attention(Q, K, V)
