"""Cheat (profiling, variant): only ``threading.setprofile`` (no audit event of its own):
found in the thread-hook of ``threading`` before the next cell.

status: graded
fails: test_kc1
"""
# %% kc1
import threading as _th


def _p(frame, event, arg):
    return None


_th.setprofile(_p)
kc1_answer = "a"
# %% kc2
kc2_answer = "b"
# %% kc3
kc3_answer = 0.75
