"""Cheat (__code__ through object.__setattr__): check_answer's code replaced, wrong answers.

status: graded
fails: test_kc1, test_kc2, test_kc3
"""
# %% kc1
kc1_answer = "wrong"
import autograder.testing as _t

object.__setattr__(_t.check_answer, "__code__", (lambda *a, **k: None).__code__)
# %% kc2
kc2_answer = "wrong"
# %% kc3
kc3_answer = "wrong"
