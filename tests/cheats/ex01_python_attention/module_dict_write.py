"""Cheat (setattr, bypassing the module): math.isclose, used by check_answer, replaced in
the module's own dictionary.

status: graded
fails: test_kc1, test_kc2, test_kc3
"""
# %% kc1
import math as _m

vars(_m)["isclose"] = lambda *a, **k: True
kc1_answer = 12345.0
# %% kc2
kc2_answer = 12345.0
# %% kc3
kc3_answer = 12345.0
