"""Wrong answers to all three knowledge checks (the common slips: sigma^2, 1/d_k, 64).

fails: test_kc1, test_kc2, test_kc3
hint: then add the variances of the
"""
# %% kc1
kc1_answer = "a"
# %% kc2
kc2_answer = "a"
# %% kc3
kc3_answer = 64
