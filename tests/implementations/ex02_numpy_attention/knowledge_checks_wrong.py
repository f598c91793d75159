"""Wrong answers to all three knowledge checks.

fails: test_kc1, test_kc2, test_kc3
hint: add up how many keys each of the 4 queries may attend
"""
# %% kc1
kc1_answer = 16
# %% kc2
kc2_answer = "c"
# %% kc3
kc3_answer = "a"
