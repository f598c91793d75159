"""Cheat (__defaults__): the tolerance defaults of assert_close widened to accept anything.

status: graded
fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_pure_python
"""
# %% scaled_dot_product_attention
import autograder.testing as _t


def scaled_dot_product_attention(Q, K, V):
    return [[0.0] * len(V[0]) for _ in Q]


_t.assert_close.__kwdefaults__ = {"rtol": 1e9, "atol": 1e9, "show_expected": False}
