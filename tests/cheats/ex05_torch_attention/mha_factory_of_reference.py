"""Cheat (hidden class, variant): no subclass, a factory function that returns the
reference's own MultiHeadAttention object (found among ``nn.Module.__subclasses__()``).
Creating an object of a hidden class from learner code is reported.

status: tampering
fails: test_mha_submodules, test_mha_not_divisible, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin, test_kc1, test_kc2, test_kc3
"""
# %% MultiHeadAttention
def MultiHeadAttention(d_model, num_heads, bias=True):
    for c in nn.Module.__subclasses__():
        if c.__name__ == "MultiHeadAttention" and c.__module__.startswith("autograder"):
            return c(d_model, num_heads, bias=bias)
    raise ValueError(f"d_model {d_model} is not divisible by num_heads {num_heads}")
