"""Cheat (tracing, variant): ``sys.settrace`` with a local trace function that replaces
the answer once check_answer's frame starts; the same for threads (``threading.settrace``).

status: graded
fails: test_kc1, test_kc2, test_kc3
"""
# %% kc1
import sys as _sys
import threading as _th


def _t(frame, event, arg):
    if frame.f_code.co_name == "check_answer" and "expected" in frame.f_locals:
        frame.f_locals["answer"] = frame.f_locals["expected"]
    return _t


_th.settrace(_t)
_sys.settrace(_t)
kc1_answer = "a"
# %% kc2
kc2_answer = "a"
# %% kc3
kc3_answer = 0.0
