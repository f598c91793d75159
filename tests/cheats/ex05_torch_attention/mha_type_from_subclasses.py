"""Cheat (hidden class, variant): the reference class kept in a dictionary and the
learner's class built with ``type()`` on it. Since issue 23 ex05's kernel holds no
reference: the class is a bare ``nn.Module`` subclass, and every MultiHeadAttention test
fails.

status: graded
fails: test_mha_submodules, test_mha_not_divisible, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
"""
# %% MultiHeadAttention
_H = {c.__qualname__: c for c in torch.nn.Module.__subclasses__()
      if c.__module__.startswith("autograder.")}
MultiHeadAttention = type("MultiHeadAttention", (_H.get("MultiHeadAttention", nn.Module),), {})
