"""Cheat (__code__): a wrong attention, plus the checks' code replaced in place through
modules reached with importlib (no assignment to a module in the source): issue 13's example.

status: graded
fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input
"""
# %% scaled_dot_product_attention
import importlib


def scaled_dot_product_attention(Q, K, V):
    return [list(map(float, row)) for row in V[:len(Q)]]


def _nothing(*args, **kwargs):
    return None


for _name in ("autograder.testing", "autograder.checks.ex01"):
    _mod = importlib.import_module(_name)
    for _f in list(vars(_mod).values()):
        if callable(_f) and hasattr(_f, "__code__"):
            try:
                _f.__code__ = _nothing.__code__
            except Exception:
                pass
