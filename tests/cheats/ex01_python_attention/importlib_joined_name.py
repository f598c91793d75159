"""Cheat (importlib): the reference imported under a name assembled at run time.

status: graded
fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_pure_python
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    import importlib

    mod = importlib.import_module(".".join(["autograder", "refer" + "ence", "python_attention"]))
    return getattr(mod, "scaled_dot_product_" + "attention")(Q, K, V)
