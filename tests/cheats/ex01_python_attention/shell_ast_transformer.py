"""Cheat (the shell): an AST transformer empties every later cell that imports from the
course (review 2; see shell_input_transformer).

status: graded
fails: test_softmax_known_values, test_softmax_stable, test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_pure_python, test_kc1, test_kc2, test_kc3
"""
# %% softmax
import ast as _ast


class _Empty(_ast.NodeTransformer):
    def visit_Module(self, node):
        if any(isinstance(n, (_ast.ImportFrom, _ast.Import)) and "autograder" in _ast.dump(n)
               for n in _ast.walk(node)):
            return _ast.Module(body=[_ast.Pass()], type_ignores=[])
        return node


get_ipython().ast_transformers.append(_Empty())
def softmax(row):
    if not row:
        raise ValueError("softmax of an empty row []")
    return [1.0 / len(row)] * len(row)
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    if not Q or not K or not V or not Q[0] or not V[0] or len(K) != len(V):
        raise ValueError("bad input")
    for M in (Q, K, V):
        if len({len(r) for r in M}) != 1:
            raise ValueError("ragged input")
    if len(Q[0]) != len(K[0]):
        raise ValueError("Q and K differ in d_k")
    return [[0.0] * len(V[0]) for _ in Q]
# %% kc1
kc1_answer = "a"
# %% kc2
kc2_answer = "a"
# %% kc3
kc3_answer = 0.1
