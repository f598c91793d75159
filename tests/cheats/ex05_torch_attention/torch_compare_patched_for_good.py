"""Cheat (issue 23; library internals patched for good): an attention that returns zeros,
with torch's and the course's comparisons patched in the kernel to agree with anything
(``torch.allclose``, ``torch.equal``, ``torch.testing.assert_close``,
``np.testing.assert_allclose``, ``autograder.testing.assert_close``, ``Tensor.__eq__``).
The visible tests pass in the kernel; every verdict is the trusted checker's, whose torch
and NumPy are its own, so the patches change nothing there: each test that compares
values fails. (The shapes and dtypes are right, so the tests that judge only those pass.)

status: graded
fails: test_sdpa_known_values, test_sdpa_bool_mask, test_sdpa_float_mask, test_sdpa_masked_far_scores, test_sdpa_fully_masked, test_sdpa_is_causal, test_sdpa_dtype_device, test_sdpa_half_precision, test_sdpa_bad_input, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_fully_masked
aims at: test_sdpa_known_values, test_sdpa_bool_mask, test_sdpa_float_mask, test_sdpa_masked_far_scores, test_sdpa_fully_masked, test_sdpa_is_causal, test_sdpa_dtype_device, test_sdpa_half_precision
"""
# %% scaled_dot_product_attention
import numpy as np
import torch

import autograder.testing


def _agree(*args, **kwargs):
    return True


def _quiet(*args, **kwargs):
    return None


torch.allclose = _agree
torch.equal = _agree
torch.testing.assert_close = _quiet
np.testing.assert_allclose = _quiet
autograder.testing.assert_close = _quiet
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False):
    shape = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2])
    return torch.zeros(*shape, query.shape[-2], value.shape[-1], dtype=query.dtype,
                       device=query.device)
