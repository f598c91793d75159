"""ex05, graded part 2: ``MultiHeadAttention`` against ``nn.MultiheadAttention``."""

from __future__ import annotations

import numpy as np
import torch

from autograder import diagnose_heads
from autograder.checks.ex05._common import (ATOL, DEVICES, RTOL, _forbidden_references, _np,
                                            _randn, own_attention)
from autograder.checks.ex05._mha_pairs import (_build, _builtin_forward, _builtin_mask,
                                               _compare, _forward, _pair, _pair_and_inputs,
                                               submodules)
from autograder.testing import assert_close, expect_value_error, explain, fail, some_true_per_row


def mha_hint(module, out, query, key=None, value=None, attn_mask=None,
             is_causal: bool = False) -> str:
    """The usual multi-head attention mistake that ``out = module(query, key, value, ...)``
    matches (the scale, the head split or merge without the transpose, the mask convention,
    the softmax axis, a missing out_proj), computed with the module's own weights; '' when
    none does. For the failure messages of the notebook's visible tests (with
    :func:`autograder.testing.explain`); it names a mistake and reveals no expected value."""
    try:
        return diagnose_heads.multi_head_hint(module, out, query, key, value, attn_mask, is_causal)
    except Exception:  # noqa: BLE001 - a diagnosis never replaces the failure it explains
        return ""


def mha_submodules(cls) -> None:
    """q_proj, k_proj, v_proj and out_proj are nn.Linear(d_model, d_model, bias=bias)."""
    for d_model, num_heads, bias in ((8, 2, True), (12, 3, False), (6, 1, True)):
        _build(cls, d_model, num_heads, bias)


def mha_rejects_indivisible(cls) -> None:
    """d_model not divisible by num_heads raises ValueError; a divisible pair does not."""
    _build(cls, 8, 4)
    for d_model, num_heads in ((10, 3), (8, 3), (6, 4)):
        expect_value_error(cls, (d_model, num_heads),
                           f"MultiHeadAttention({d_model}, {num_heads})")


def mha_matches_torch(cls, seed: int = 11) -> None:
    """Self- and cross-attention equal nn.MultiheadAttention with the same weights."""
    own_attention(cls, "mha")
    configs = [(2, 5, 5, 8, 2, True), (2, 4, 6, 12, 3, True), (1, 3, 3, 16, 4, False),
               (3, 6, 2, 8, 8, True)]
    for device in DEVICES:
        for B, L, S, d, h, bias in configs:
            mine, builtin, oracle = _pair(cls, d, h, bias, device, seed)
            gen = torch.Generator().manual_seed(seed)
            x, y, z = _randn(gen, B, L, d, device=device), _randn(gen, B, S, d, device=device), \
                _randn(gen, B, S, d, device=device)
            name = f"MultiHeadAttention({d}, {h}, bias={bias}) on {device}"
            what = f"{name}, self-attention of (B, L, d_model) = {(B, L, d)}"
            out = _forward(mine, x, x, x, what=what, shape=(B, L, d), device=device)
            _compare(oracle, out, _builtin_forward(builtin, x, x, x), what, x, x, x, h)
            what = f"{name}, cross-attention from L = {L} to S = {S} with different key and value"
            out = _forward(mine, x, y, z, what=what, shape=(B, L, d), device=device)
            _compare(oracle, out, _builtin_forward(builtin, x, y, z), what, x, y, z, h)


def mha_masks(cls, seed: int = 12) -> None:
    """attn_mask (L, S), (B, 1, L, S) and (B, num_heads, L, S), boolean and float, as torch's (inverted)."""
    own_attention(cls, "mha")
    B, L, S, d, h = 2, 4, 5, 8, 2
    for device in DEVICES:
        (mine, builtin, oracle), gen, x, y = _pair_and_inputs(cls, B, L, S, d, h, device, seed)
        masks = {
            "a boolean (L, S) mask": some_true_per_row(gen, (L, S)),
            "a boolean (B, 1, L, S) mask": some_true_per_row(gen, (B, 1, L, S)),
            "a boolean (B, num_heads, L, S) mask": some_true_per_row(gen, (B, h, L, S)),
            "a float (L, S) mask": _randn(gen, L, S, scale=2.0),
            "a float (B, num_heads, L, S) mask of 0 and -inf":
                torch.where(some_true_per_row(gen, (B, h, L, S)), 0.0, float("-inf")).double(),
        }
        for name, mask in masks.items():
            mask = mask.to(device)
            what = f"MultiHeadAttention({d}, {h}) on {device} with {name}"
            out = _forward(mine, x, y, y, attn_mask=mask, what=what, shape=(B, L, d), device=device)
            expected = _builtin_forward(builtin, x, y, y, attn_mask=_builtin_mask(mask, B, h))
            _compare(oracle, out, expected, what, x, y, y, h, attn_mask=mask)


def mha_is_causal(cls, seed: int = 13) -> None:
    """is_causal=True equals torch with the causal mask, and the future does not leak back."""
    own_attention(cls, "mha")
    d, h = 8, 2
    for device in DEVICES:
        mine, builtin, oracle = _pair(cls, d, h, True, device, seed)
        gen = torch.Generator().manual_seed(seed)
        for L, S in ((5, 5), (3, 6)):
            x, y = _randn(gen, 2, L, d, device=device), _randn(gen, 2, S, d, device=device)
            if L == S:
                y = x
            what = f"MultiHeadAttention({d}, {h}) on {device} with is_causal=True, L = {L}, S = {S}"
            out = _forward(mine, x, y, y, is_causal=True, what=what, shape=(2, L, d), device=device)
            causal = torch.ones(L, S, dtype=torch.bool, device=device).tril()
            expected = _builtin_forward(builtin, x, y, y, attn_mask=~causal)
            _compare(oracle, out, expected, what, x, y, y, h, is_causal=True)
        x = _randn(gen, 2, 6, d, device=device)
        base = _forward(mine, x, is_causal=True, what="self-attention with is_causal=True",
                        shape=(2, 6, d), device=device)
        for t in range(5):
            x2 = x.clone()
            x2[:, t + 1:] = _randn(gen, 2, 5 - t, d, device=device, scale=5.0)
            what = f"causal self-attention on {device} after changing the tokens after position {t}"
            out = _forward(mine, x2, is_causal=True, what=what, shape=(2, 6, d), device=device)
            if not np.allclose(_np(out)[:, : t + 1], _np(base)[:, : t + 1], rtol=1e-12, atol=1e-12):
                with explain(lambda: diagnose_heads.multi_head_hint(oracle, out, x2, is_causal=True,
                                                              num_heads=h)):
                    fail(f"{what}: outputs at positions 0..{t} changed, so the future leaks "
                         "into the past")


def mha_key_value_default(cls, seed: int = 14) -> None:
    """forward(x) and forward(x, attn_mask=m) equal forward(x, x, x, ...): key and value default to query."""
    own_attention(cls, "mha")
    d, h = 8, 2
    mine, _, _ = _pair(cls, d, h, True, "cpu", seed)
    gen = torch.Generator().manual_seed(seed)
    x = _randn(gen, 2, 5, d)
    mask = some_true_per_row(gen, (5, 5))
    full = _forward(mine, x, x, x, what="forward(x, x, x)", shape=(2, 5, d), device="cpu")
    short = _forward(mine, x, what="forward(x)", shape=(2, 5, d), device="cpu")
    assert_close(_np(short), _np(full), "forward(x) against forward(x, x, x)", rtol=1e-12, atol=1e-12)
    full = _forward(mine, x, x, x, attn_mask=mask, what="forward(x, x, x, attn_mask=m)",
                    shape=(2, 5, d), device="cpu")
    short = _forward(mine, x, attn_mask=mask, what="forward(x, attn_mask=m)", shape=(2, 5, d),
                     device="cpu")
    assert_close(_np(short), _np(full), "forward(x, attn_mask=m) against forward(x, x, x, attn_mask=m)",
                 rtol=1e-12, atol=1e-12)


def mha_fully_masked_rows(cls, seed: int = 15) -> None:
    """A query masked in every head gives out_proj(0) = the output bias, never NaN."""
    own_attention(cls, "mha")
    B, L, S, d, h = 2, 4, 5, 8, 2
    for device in DEVICES:
        (mine, _, oracle), gen, x, y = _pair_and_inputs(cls, B, L, S, d, h, device, seed)
        mask = some_true_per_row(gen, (B, h, L, S))
        mask[0, :, 1] = False  # query (0, 1): no key in any head
        mask[1, 0, 2] = False  # query (1, 2): no key in head 0 only
        mask = mask.to(device)
        what = f"MultiHeadAttention({d}, {h}) on {device} with fully masked queries"
        got = _np(_forward(mine, x, y, y, attn_mask=mask, what=what, shape=(B, L, d), device=device))
        if not np.isfinite(got).all():
            fail(f"{what}: the output has NaN or inf; a query with no key should give zeros "
                 "before the output projection")
        assert_close(got[0, 1], _np(oracle.out_proj.bias), f"{what}: query (0, 1), masked in "
                     "every head, should give out_proj of a zero vector", rtol=RTOL, atol=ATOL)
        with torch.no_grad():
            expected = oracle(x, y, y, attn_mask=mask)
        _compare(oracle, torch.as_tensor(got), expected, what, x, y, y, h, attn_mask=mask)


def mha_permutation_equivariant(cls, seed: int = 16) -> None:
    """Permuting the tokens of self-attention permutes its output the same way."""
    own_attention(cls, "mha")
    d, h, L = 12, 3, 7
    mine, _, oracle = _pair(cls, d, h, True, "cpu", seed)
    gen = torch.Generator().manual_seed(seed)
    x = _randn(gen, 2, L, d)
    perm = torch.randperm(L, generator=gen)
    out = _forward(mine, x, what="self-attention", shape=(2, L, d), device="cpu")
    out_p = _forward(mine, x[:, perm], what="self-attention of permuted tokens", shape=(2, L, d),
                     device="cpu")
    # the usual mistake (such as heads split without the transpose), with the module's weights
    with explain(lambda: diagnose_heads.multi_head_hint(oracle, out, x, num_heads=h)
                 or diagnose_heads.multi_head_hint(oracle, out_p, x[:, perm], num_heads=h)):
        assert_close(_np(out_p), _np(out[:, perm]), "self-attention of permuted tokens against "
                     "the permuted output", rtol=1e-9, atol=1e-10)


# torch's modules that compute attention (what a learner's module may not hold).
_FORBIDDEN_MODULES = ("MultiheadAttention", "TransformerEncoderLayer", "TransformerDecoderLayer",
                      "TransformerEncoder", "TransformerDecoder", "Transformer")


def mha_does_not_call_torch_attention(cls) -> None:
    """MultiHeadAttention neither calls nor holds torch's attention functions or modules."""
    found = _forbidden_references(cls)
    if found:
        fail(f"MultiHeadAttention refers to {found[0]}, which this exercise forbids")
    own_attention(cls, "mha")
    module = _build(cls, 8, 2)
    for name, facts in submodules(module).items():
        if facts["torch_class"].rpartition(".")[2] in _FORBIDDEN_MODULES:
            fail(f"MultiHeadAttention holds an nn.{facts['torch_class'].rpartition('.')[2]} "
                 f"({name or 'itself'}), which this exercise forbids")
    x = torch.randn(1, 3, 8)
    _forward(module, x, what="MultiHeadAttention(8, 2) on (1, 3, 8)", shape=(1, 3, 8), device="cpu")
    _forward(module, x, is_causal=True, what="MultiHeadAttention(8, 2) with is_causal=True",
             shape=(1, 3, 8), device="cpu")
