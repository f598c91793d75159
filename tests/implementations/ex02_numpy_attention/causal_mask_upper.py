"""Wrong: the upper triangle (True = masked out, the opposite convention).

fails: test_causal_mask
"""
# %% causal_mask
def causal_mask(T):
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise ValueError(f"T must be a positive integer, got {T!r}")
    return np.triu(np.ones((T, T), dtype=bool), k=1)
