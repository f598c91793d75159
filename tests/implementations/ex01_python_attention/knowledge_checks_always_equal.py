"""Cheat: answers are objects whose __eq__ always returns True.

fails: test_kc1, test_kc2, test_kc3
"""
# %% kc1
class Anything(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


kc1_answer = Anything("x")
# %% kc2
kc2_answer = Anything("y")
# %% kc3
class AnyNumber(float):
    def __eq__(self, other):
        return True

    __hash__ = float.__hash__


kc3_answer = AnyNumber(9.0)
