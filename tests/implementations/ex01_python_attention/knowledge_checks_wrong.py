"""Wrong answers to all three knowledge checks.

fails: test_kc1, test_kc2, test_kc3
hint: count the rows and the columns of Q
"""
# %% kc1
kc1_answer = "a"
# %% kc2
kc2_answer = "c"
# %% kc3
kc3_answer = 0.5
