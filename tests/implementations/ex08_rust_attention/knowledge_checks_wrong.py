"""Wrong answers to all three knowledge checks.

fails: test_kc1, test_kc2, test_kc3
hint: an overflowing exp does not panic or raise
"""
# %% kc1
kc1_answer = "a"  # a panic: Rust's f64 does not panic on overflow
# %% kc2
kc2_answer = "b"  # a move: &[f64] is a borrow
# %% kc3
kc3_answer = 12  # one multiplication per score: the d_k products of each are forgotten
