"""Cheat (profiling): a profile function rewrites ``check_answer``'s local ``answer`` to
the ``expected`` one through ``PyFrame_LocalsToFast`` (review 1, hole 1). Setting the
profile function is reported; check_answer runs as a guarded check with no profiling.

status: graded
fails: test_kc1, test_kc2, test_kc3
"""
# %% kc1
import ctypes as _ct
import sys as _sys


def _p(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "check_answer":
        frame.f_locals["answer"] = frame.f_locals["expected"]
        _ct.pythonapi.PyFrame_LocalsToFast(_ct.py_object(frame), _ct.c_int(0))


_sys.setprofile(_p)
kc1_answer = "a"
# %% kc2
kc2_answer = "a"
# %% kc3
kc3_answer = 0.0
