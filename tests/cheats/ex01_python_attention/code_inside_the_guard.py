"""Cheat (code run inside the guard): an object in the namespace whose metaclass defines
__eq__; the guard's scan of the namespace compares its type with list/tuple/... and so
runs learner code while its audit hook is 'busy' (events ignored). That code walks the
frames to the hook's, takes the private checks and the reference, and makes check_answer a
no-op (review 2). Events that learner code raises while the guard runs (its hook is per
thread now) are reported.

status: graded
fails: test_softmax_known_values, test_softmax_stable, test_softmax_empty, test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_pure_python, test_kc1, test_kc2, test_kc3
"""
# %% softmax
import sys as _sys

_G = {}


class _Meta(type):
    def __eq__(cls, other):
        if "p" not in _G:
            try:
                f = _sys._getframe(1)
                while f is not None:
                    loc = f.f_locals
                    if "privates" in loc and "state" in loc:
                        _G["p"] = loc["privates"]
                        break
                    f = f.f_back
            except Exception as e:  # noqa: BLE001
                _G["err"] = repr(e)
        if "p" in _G and "done" not in _G:
            _G["done"] = 1
            for name, mod in _G["p"].items():
                if hasattr(mod, "ref"):
                    _G["ref"] = mod.ref
                if hasattr(mod, "check_answer"):
                    mod.check_answer = lambda *a, **k: None
        return type.__eq__(cls, other)

    __hash__ = type.__hash__


class _Probe(metaclass=_Meta):
    pass


_probe = _Probe()


def softmax(row):
    return _G["ref"].softmax(row)
# %% scaled_dot_product_attention
print(sorted(_G))
def scaled_dot_product_attention(Q, K, V):
    return _G["ref"].scaled_dot_product_attention(Q, K, V)
# %% kc1
kc1_answer = "a"
# %% kc2
kc2_answer = "a"
# %% kc3
kc3_answer = 0.1
