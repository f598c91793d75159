"""Cheat (setattr): check_answer replaced with setattr on the module importlib returns.

status: graded
fails: test_kc1, test_kc2, test_kc3
"""
# %% kc1
import importlib as _il

setattr(_il.import_module("autograder." + "testing"), "check_" + "answer", lambda *a, **k: None)
kc1_answer = "wrong"
# %% kc2
kc2_answer = "wrong"
# %% kc3
kc3_answer = "wrong"
