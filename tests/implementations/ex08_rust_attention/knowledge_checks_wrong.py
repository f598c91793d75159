"""Wrong answers to all three knowledge checks.

fails: test_kc1, test_kc2, test_kc3
hint: an exp too small for f64 does not panic
"""
# %% kc1
kc1_answer = "a"  # the weights of a stable softmax, but unshifted exp(-1000.0) is 0.0 in f64
# %% kc2
kc2_answer = "b"  # a move: &[f64] is a borrow
# %% kc3
kc3_answer = 12  # one multiplication per score: the d_k products of each are forgotten
