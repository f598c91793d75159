"""Cheat (gc): the reference function found among all objects the garbage collector tracks.

status: graded
fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    import gc
    import types

    for obj in gc.get_objects():
        if isinstance(obj, types.FunctionType) and obj.__name__ == "scaled_dot_product_attention" \
                and obj.__module__.startswith("autograder"):
            return obj(Q, K, V)
    return [[0.0] * len(V[0]) for _ in Q]
