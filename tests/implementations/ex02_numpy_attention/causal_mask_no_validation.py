"""Wrong: no check of T, so causal_mask(0) returns an empty array instead of raising.

fails: test_causal_mask_bad_input
"""
# %% causal_mask
def causal_mask(T):
    return np.tril(np.ones((T, T), dtype=bool))
