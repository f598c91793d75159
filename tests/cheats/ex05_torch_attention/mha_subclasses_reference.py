"""Cheat (hidden class): the reference MultiHeadAttention found among
``nn.Module.__subclasses__()`` and subclassed (review 1, hole 3). Since issue 23 ex05's
kernel holds no reference: the class is a bare ``nn.Module`` subclass that takes no
sizes, and every MultiHeadAttention test fails.

status: graded
fails: test_mha_submodules, test_mha_not_divisible, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
"""
# %% MultiHeadAttention
_R = [c for c in nn.Module.__subclasses__()
      if c.__name__ == "MultiHeadAttention" and c.__module__.startswith("autograder")]


class MultiHeadAttention(_R[0] if _R else nn.Module):
    pass
