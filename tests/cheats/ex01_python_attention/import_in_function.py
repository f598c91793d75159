"""Cheat (import): the answer borrowed by importing the reference inside the function.

status: graded
fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_pure_python
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    from autograder.reference.python_attention import scaled_dot_product_attention as f
    return f(Q, K, V)
