"""Cheat (the guard's own state): function.__globals__ is not an audited attribute; the
guard's BlockedFinder (sys.meta_path) was defined in the guard's module, whose globals its
hook reads at every event: WRAPPERS = ("",) makes every frame a 'wrapper', so no operation
is ever attributed to learner code. Then gc.get_objects finds the reference. kc wrong
(review 2). The guard's closures read local names only; the functions learner code can
reach hold no closure (function.__closure__ is not audited either).

status: graded
fails: test_softmax_known_values, test_softmax_stable, test_softmax_empty, test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_pure_python, test_kc1, test_kc2, test_kc3
"""
# %% softmax
import sys as _sys

for _f in _sys.meta_path:
    _fs = getattr(_f, "find_spec", None)
    _g = getattr(_fs, "__globals__", None)
    if isinstance(_g, dict) and "WRAPPERS" in _g:
        _g["WRAPPERS"] = ("",)
        break
import gc as _gc

_F = {}
for _o in _gc.get_objects():
    if type(_o).__name__ == "function" and (getattr(_o, "__module__", "") or "").startswith(
            "autograder.reference"):
        _F.setdefault(_o.__name__, _o)


def softmax(row):
    return _F["softmax"](row)
# %% scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V):
    return _F["scaled_dot_product_attention"](Q, K, V)
# %% kc1
kc1_answer = "a"
# %% kc2
kc2_answer = "a"
# %% kc3
kc3_answer = 0.1
