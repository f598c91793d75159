"""Cheat (issue 23; torch's attention in a process the switch does not reach): a helper
Python started once with ``subprocess`` computes F.scaled_dot_product_attention on the
inputs it is sent (pickled over pipes) in an interpreter whose torch nobody touched. The
probe that runs the learner's cells again forbids ``execve`` with a seccomp filter
installed before them: no new interpreter starts there, the function raises, and every
scaled_dot_product_attention test, and every test that runs MultiHeadAttention, fails.

status: graded
fails: test_sdpa_known_values, test_sdpa_bool_mask, test_sdpa_float_mask, test_sdpa_masked_far_scores, test_sdpa_fully_masked, test_sdpa_is_causal, test_sdpa_dtype_device, test_sdpa_half_precision, test_sdpa_bad_input, test_sdpa_no_builtin, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
aims at: test_sdpa_known_values, test_sdpa_bool_mask, test_sdpa_float_mask, test_sdpa_masked_far_scores, test_sdpa_fully_masked, test_sdpa_is_causal, test_sdpa_dtype_device, test_sdpa_half_precision, test_sdpa_bad_input, test_sdpa_no_builtin, test_mha_matches_torch, test_mha_masks, test_mha_is_causal, test_mha_defaults, test_mha_fully_masked, test_mha_permutation, test_mha_no_builtin
"""
# %% scaled_dot_product_attention
import pickle
import subprocess
import sys

import torch

_SERVER = r"""
import pickle, sys, torch
f = getattr(torch.nn.functional, "scaled_dot_product_" + "attention")
while True:
    try:
        q, k, v, m, c = pickle.load(sys.stdin.buffer)
    except EOFError:
        break
    out = torch.nan_to_num(f(q, k, v, attn_mask=m, is_causal=c), nan=0.0)
    pickle.dump(out, sys.stdout.buffer)
    sys.stdout.buffer.flush()
"""
_HELPER = []


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False):
    if key.shape[-1] != query.shape[-1] or value.shape[-2] != key.shape[-2]:
        raise ValueError(f"mismatched shapes {tuple(query.shape)}, {tuple(key.shape)}, "
                         f"{tuple(value.shape)}")
    if attn_mask is not None:
        try:
            torch.broadcast_shapes(attn_mask.shape, (*torch.broadcast_shapes(
                query.shape[:-2], key.shape[:-2]), query.shape[-2], key.shape[-2]))
        except RuntimeError:
            raise ValueError(f"attn_mask of shape {tuple(attn_mask.shape)} does not broadcast") from None
    if not _HELPER:
        _HELPER.append(subprocess.Popen([sys.executable, "-c", _SERVER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE))
    p = _HELPER[0]
    dt, device = query.dtype, query.device
    work = torch.float32 if dt in (torch.float16, torch.bfloat16) else dt
    m = attn_mask
    if m is not None and m.dtype != torch.bool:
        m = m.to(work)
    args = [t.detach().to("cpu", work) for t in (query, key, value)]
    pickle.dump((*args, None if m is None else m.cpu(), is_causal), p.stdin)
    p.stdin.flush()
    return pickle.load(p.stdout).to(device, dt)
