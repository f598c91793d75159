"""Cheat (gc): the hidden check's globals reached from its facade through gc.get_referents.

status: graded
fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_pure_python
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    import gc

    from autograder.checks import ex01

    seen, todo = set(), [ex01.attention_matches_reference]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or len(seen) > 5000:
            continue
        seen.add(id(obj))
        if isinstance(obj, dict) and callable(obj.get("scaled_dot_product_attention")):
            return obj["scaled_dot_product_attention"](Q, K, V)
        todo.extend(gc.get_referents(obj))
    return [[0.0] * len(V[0]) for _ in Q]
