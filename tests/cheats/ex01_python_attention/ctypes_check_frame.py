"""Cheat (ctypes, frames): a learner cell calls a check facade with a function that walks
the C API's frame chain (``PyThreadState_GetFrame``) up to the check's ``ref`` (review 1,
hole 2). Any ctypes call from learner code is reported.

status: graded
fails: test_softmax_known_values, test_softmax_stable, test_softmax_empty, test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_pure_python
"""
# %% softmax
import ctypes as _ct

_P = _ct.pythonapi
_P.PyThreadState_Get.restype = _ct.c_void_p
_P.PyThreadState_GetFrame.argtypes = [_ct.c_void_p]
_P.PyThreadState_GetFrame.restype = _ct.py_object


def _ref():
    f = _P.PyThreadState_GetFrame(_P.PyThreadState_Get())
    while f is not None:
        r = f.f_globals.get("ref")
        if r is not None and hasattr(r, "softmax"):
            return r
        f = f.f_back


_R = {}


def _grab(*a):
    r = _ref()
    if r:
        _R["ref"] = r
    raise ValueError("grabbed")


from autograder.checks import ex01 as _c

try:
    _c.softmax_rejects_empty(_grab)
except Exception:
    pass


def softmax(row):
    if "ref" in _R:
        return _R["ref"].softmax(row)
    import math
    if not row:
        raise ValueError("softmax of an empty row []")
    m = max(row)
    e = [math.exp(x - m) for x in row]
    return [x / sum(e) for x in e]
