"""Cheat (__globals__): the math module seen by check_answer replaced through its globals.

status: graded
fails: test_kc1, test_kc2, test_kc3
"""
# %% kc1
import types as _types

from autograder.testing import check_answer as _ca

_fake = _types.SimpleNamespace(isclose=lambda *a, **k: True)
_ca.__globals__["math"] = _fake
kc1_answer = 12345.0
# %% kc2
kc2_answer = 12345.0
# %% kc3
kc3_answer = 12345.0
