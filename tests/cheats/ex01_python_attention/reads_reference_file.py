"""Cheat (reading files): the reference's source read from the course folder and run.

status: graded
fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_pure_python
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    import os

    import autograder

    path = os.path.join(os.path.dirname(autograder.__file__), "reference", "python_attention.py")
    ns = {}
    exec(open(path).read(), ns)
    return ns["scaled_dot_product_attention"](Q, K, V)
