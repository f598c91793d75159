"""Cheat (reading files): the solution notebook opened at the course folder's path.

status: graded
fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_pure_python
"""
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    import json

    nb = json.load(open("{REPO}/solutions/ex01_python_attention/ex01_python_attention.ipynb"))
    src = [c for c in nb["cells"] if "def scaled_dot_product_attention" in "".join(c["source"])]
    ns = {}
    exec("".join(src[0]["source"]), ns)
    return ns["scaled_dot_product_attention"](Q, K, V)
