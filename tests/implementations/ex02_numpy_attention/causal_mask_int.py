"""Wrong: the right pattern, but 0/1 integers instead of booleans.

fails: test_causal_mask
"""
# %% causal_mask
def causal_mask(T):
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise ValueError(f"T must be a positive integer, got {T!r}")
    return np.tril(np.ones((T, T), dtype=int))
