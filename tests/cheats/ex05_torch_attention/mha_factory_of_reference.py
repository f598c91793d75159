"""Cheat (hidden class, variant): no subclass, a factory function that returns the
reference's own MultiHeadAttention object (found among ``nn.Module.__subclasses__()``).
Since issue 23 ex05's kernel holds no reference: the search finds nothing, the factory
raises ValueError for every size, and every MultiHeadAttention test fails (it is
nothing of its own); the knowledge checks keep their points.

status: graded
fails: test_mha_submodules, test_mha_not_divisible, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
"""
# %% MultiHeadAttention
def MultiHeadAttention(d_model, num_heads, bias=True):
    for c in nn.Module.__subclasses__():
        if c.__name__ == "MultiHeadAttention" and c.__module__.startswith("autograder"):
            return c(d_model, num_heads, bias=bias)
    raise ValueError(f"d_model {d_model} is not divisible by num_heads {num_heads}")
