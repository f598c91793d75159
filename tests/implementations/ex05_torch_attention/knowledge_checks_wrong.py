"""Wrong answers to all three knowledge checks.

fails: test_kc1, test_kc2, test_kc3
hint: Broadcasting lines shapes up from the last dimension
"""
# %% kc1
kc1_answer = "a"
# %% kc2
kc2_answer = 512
# %% kc3
kc3_answer = 5
