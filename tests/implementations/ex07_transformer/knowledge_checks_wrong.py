"""Wrong answers to every knowledge check (right type, wrong value).

fails: test_kc1, test_kc2, test_kc3, test_kc4
hint: (chapter 7, Counting parameters)
"""
# %% kc1
kc1_answer = 2 * 512 * 2048  # the feed-forward weights only
# %% kc2
kc2_answer = "a"
# %% kc3
kc3_answer = "post-norm"
# %% kc4
kc4_answer = 0.9
