"""Wrong answers to all three knowledge checks.

fails: test_kc1, test_kc2, test_kc3
hint: (chapter 4, The encoding)
"""
# %% kc1
kc1_answer = 0.0001
# %% kc2
kc2_answer = "a"
# %% kc3
kc3_answer = 1.0
