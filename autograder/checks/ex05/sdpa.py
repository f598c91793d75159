"""ex05, graded part 1: ``scaled_dot_product_attention`` against torch's built-in."""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from autograder.checks.ex05._common import (
    ATOL,
    DEVICES,
    RTOL,
    _compare,
    _forbidden_references,
    _np,
    _randn,
    _sdpa,
    _torch_sdpa,
    guarded,
    own_attention,
    ref,
)
from autograder.testing import assert_close, expect_value_error, fail, some_true_per_row

# --- scaled_dot_product_attention ------------------------------------------------------------


def sdpa_matches_torch(sdpa: Callable, seed: int = 1) -> None:
    """Unmasked attention of random inputs (2-D to 4-D, L != S, E != E_v) equals torch's."""
    own_attention(sdpa, "sdpa")
    gen = torch.Generator().manual_seed(seed)
    shapes = [((5, 4), (7, 4), (7, 3)), ((2, 5, 4), (2, 5, 4), (2, 5, 4)),
              ((2, 3, 6, 8), (2, 3, 4, 8), (2, 3, 4, 5)), ((1, 1, 1, 2), (1, 1, 3, 2), (1, 1, 3, 1))]
    for device in DEVICES:
        for sq, sk, sv in shapes:
            q, k, v = (_randn(gen, *s, device=device) for s in (sq, sk, sv))
            what = f"attention with query {sq}, key {sk}, value {sv} on {device}"
            out = _sdpa(sdpa, q, k, v, what=what, device=device)
            _compare(out, q, k, v, what)


def sdpa_bool_mask(sdpa: Callable, seed: int = 2) -> None:
    """A bool attn_mask (True = may attend) of shape (L, S), (B, 1, 1, S), (B, 1, L, S) or (B, H, L, S)."""
    own_attention(sdpa, "sdpa")
    gen = torch.Generator().manual_seed(seed)
    B, H, L, S, E = 2, 3, 4, 6, 5
    for device in DEVICES:
        q, k, v = (_randn(gen, B, H, T, E, device=device) for T in (L, S, S))
        lengths = torch.tensor([4, 6])
        masks = {
            "(L, S)": some_true_per_row(gen, (L, S)),
            "(B, 1, 1, S) padding": (torch.arange(S) < lengths[:, None])[:, None, None, :],
            "(B, 1, L, S)": some_true_per_row(gen, (B, 1, L, S)),
            "(B, H, L, S)": some_true_per_row(gen, (B, H, L, S)),
        }
        for name, mask in masks.items():
            mask = mask.to(device)
            what = f"attention with a boolean {name} mask on {device}"
            out = _sdpa(sdpa, q, k, v, what=what, attn_mask=mask, device=device)
            _compare(out, q, k, v, what, attn_mask=mask)


def sdpa_float_mask(sdpa: Callable, seed: int = 3) -> None:
    """A float attn_mask is added to the scores (finite values and some -inf)."""
    own_attention(sdpa, "sdpa")
    gen = torch.Generator().manual_seed(seed)
    B, H, L, S, E = 2, 2, 4, 5, 3
    for device in DEVICES:
        q, k, v = (_randn(gen, B, H, T, E, device=device) for T in (L, S, S))
        bias = _randn(gen, L, S, scale=2.0)
        blocked = torch.where(some_true_per_row(gen, (B, 1, L, S)), 0.0, float("-inf"))
        for name, mask in (("(L, S) of finite values", bias), ("(B, 1, L, S) of 0 and -inf", blocked)):
            mask = mask.to(device, torch.float64)
            what = f"attention with a float {name} mask on {device}"
            out = _sdpa(sdpa, q, k, v, what=what, attn_mask=mask, device=device)
            _compare(out, q, k, v, what, attn_mask=mask)


def sdpa_masked_far_scores(sdpa: Callable, seed: int = 4) -> None:
    """Masked keys get weight 0 even when every allowed score is around -2e4 (no finite fill)."""
    own_attention(sdpa, "sdpa")
    gen = torch.Generator().manual_seed(seed)
    L, S, E = 4, 6, 4
    c = (2e4 * E ** 0.5) ** 0.5  # first coordinates give every score an offset of -2e4
    for device in DEVICES:
        q = torch.cat([torch.full((2, L, 1), c, dtype=torch.float64), _randn(gen, 2, L, E - 1)], -1)
        k = torch.cat([torch.full((2, S, 1), -c, dtype=torch.float64), _randn(gen, 2, S, E - 1)], -1)
        v = _randn(gen, 2, S, 3)
        mask = some_true_per_row(gen, (2, L, S), p=0.5)
        q, k, v, mask = q.to(device), k.to(device), v.to(device), mask.to(device)
        what = f"attention with a boolean mask and scores around -2e4 on {device}"
        out = _sdpa(sdpa, q, k, v, what=what, attn_mask=mask, device=device)
        _compare(out, q, k, v, what, attn_mask=mask, rtol=1e-6, atol=1e-8)


def sdpa_fully_masked_rows(sdpa: Callable, seed: int = 5) -> None:
    """A query that may attend to no key gets a zero output, never NaN (bool and float masks)."""
    own_attention(sdpa, "sdpa")
    gen = torch.Generator().manual_seed(seed)
    B, H, L, S, E = 2, 2, 4, 5, 3
    for device in DEVICES:
        q, k, v = (_randn(gen, B, H, T, E, device=device) for T in (L, S, S))
        mask = some_true_per_row(gen, (B, H, L, S))
        mask[0, 1, 2] = False
        mask[1, 0, 0] = False
        mask[1, 1, 3] = False
        empty = ~mask.any(-1)
        masks = {"boolean": mask.to(device),
                 "float (-inf)": torch.where(mask, 0.0, float("-inf")).to(device, torch.float64)}
        for name, m in masks.items():
            what = f"attention with a {name} mask where some queries may attend to no key on {device}"
            out = _sdpa(sdpa, q, k, v, what=what, attn_mask=m, device=device)
            got = _np(out)
            rows = got[empty.numpy()]
            if not np.isfinite(rows).all():
                fail(f"{what}: a fully masked query gives NaN or inf; it should give zeros")
            if np.any(rows != 0):
                fail(f"{what}: a fully masked query should give a zero output")
            expected = _np(ref.scaled_dot_product_attention(q, k, v, attn_mask=m))
            assert_close(got, expected, what, rtol=RTOL, atol=ATOL)
            keep = (~empty).numpy()
            builtin = _np(_torch_sdpa(q, k, v, attn_mask=m))
            assert_close(got[keep], builtin[keep], f"{what} (rows with a key, against torch)",
                         rtol=RTOL, atol=ATOL)


def sdpa_is_causal(sdpa: Callable, seed: int = 6) -> None:
    """is_causal=True is top-left aligned (L == S and L != S), and the future never leaks back."""
    own_attention(sdpa, "sdpa")
    gen = torch.Generator().manual_seed(seed)
    for device in DEVICES:
        for L, S in ((5, 5), (3, 6), (6, 3)):
            q, k, v = _randn(gen, 2, 2, L, 4, device=device), _randn(gen, 2, 2, S, 4, device=device), \
                _randn(gen, 2, 2, S, 3, device=device)
            what = f"attention with is_causal=True, L = {L}, S = {S} on {device}"
            out = _sdpa(sdpa, q, k, v, what=what, is_causal=True, device=device)
            _compare(out, q, k, v, what, is_causal=True)
            for t in range(min(L, S) - 1):
                k2, v2 = k.clone(), v.clone()
                k2[..., t + 1:, :] = _randn(gen, *k2[..., t + 1:, :].shape, device=device, scale=5.0)
                v2[..., t + 1:, :] = _randn(gen, *v2[..., t + 1:, :].shape, device=device, scale=5.0)
                w2 = f"{what}, after changing keys and values after position {t}"
                out2 = _sdpa(sdpa, q, k2, v2, what=w2, is_causal=True, device=device)
                if not np.allclose(_np(out2)[..., : t + 1, :], _np(out)[..., : t + 1, :], rtol=1e-12,
                                   atol=1e-12):
                    fail(f"{w2}: outputs at positions 0..{t} changed, so the future leaks into the past")


def sdpa_dtype_and_device(sdpa: Callable, seed: int = 7) -> None:
    """float32 stays float32 and float64 stays float64, on the device of the inputs."""
    own_attention(sdpa, "sdpa")
    gen = torch.Generator().manual_seed(seed)
    for device in DEVICES:
        for dtype, tol in ((torch.float32, 1e-5), (torch.float64, 1e-10)):
            q, k, v = (_randn(gen, 2, T, 4, device=device, dtype=dtype) for T in (3, 5, 5))
            mask = some_true_per_row(gen, (3, 5)).to(device)
            for m in (None, mask):
                what = f"attention of {dtype} inputs on {device}" + ("" if m is None else " with a mask")
                out = _sdpa(sdpa, q, k, v, what=what, attn_mask=m, device=device)
                if out.dtype != dtype:
                    fail(f"{what}: the output should be {dtype}, got {out.dtype}")
                _compare(out, q, k, v, what, attn_mask=m, rtol=tol, atol=tol, with_torch=False)


def sdpa_half_precision(sdpa: Callable, seed: int = 8) -> None:
    """float16 and bfloat16 come back in their dtype, computed in float32 (no overflow at 1e5)."""
    own_attention(sdpa, "sdpa")
    gen = torch.Generator().manual_seed(seed)
    E = 16
    c = (1e5 * E ** 0.5) ** 0.5  # 632.5: q.k / sqrt(E) is about 1e5, beyond float16's 65504
    for device in DEVICES:
        for dtype in (torch.float16, torch.bfloat16):
            tol = 1e-2 if dtype == torch.float16 else 4e-2
            q, k, v = (_randn(gen, 2, T, E, device=device, dtype=dtype) for T in (4, 6, 6))
            what = f"attention of {dtype} inputs on {device}"
            out = _sdpa(sdpa, q, k, v, what=what, device=device)
            if out.dtype != dtype:
                fail(f"{what}: the output should be {dtype}, got {out.dtype}")
            expected = ref.scaled_dot_product_attention(q.float(), k.float(), v.float())
            assert_close(_np(out), _np(expected), what, rtol=tol, atol=tol)
            # Every score near 1e5 plus an O(1) part: float16 overflows and bfloat16 rounds
            # the O(1) part away unless the scores are computed in float32.
            first = torch.full((4, 1), round(c), dtype=torch.float64)
            q = torch.cat([first, _randn(gen, 4, E - 1)], -1).to(device, dtype)
            k = torch.cat([first[:1].expand(6, 1), _randn(gen, 6, E - 1)], -1).to(device, dtype)
            v = _randn(gen, 6, 3, device=device, dtype=dtype)
            what = f"attention of {dtype} inputs with scores near 1e5 on {device}"
            out = _sdpa(sdpa, q, k, v, what=what, device=device)
            got = _np(out)
            if not np.isfinite(got).all():
                fail(f"{what}: the output has inf or NaN; compute the scores and softmax in float32")
            expected = ref.scaled_dot_product_attention(q.float(), k.float(), v.float())
            assert_close(got, _np(expected), what, rtol=tol, atol=tol)


def sdpa_rejects_bad_input(sdpa: Callable) -> None:
    """Mismatched E, mismatched S and a mask that does not broadcast raise ValueError."""
    own_attention(sdpa, "sdpa")
    gen = torch.Generator().manual_seed(9)
    q, k, v = _randn(gen, 2, 5, 4), _randn(gen, 2, 7, 4), _randn(gen, 2, 7, 3)
    _sdpa(sdpa, q, k, v, what="attention of valid inputs")
    cases = {
        "query with E = 4 and key with E = 3": (q, _randn(gen, 2, 7, 3), v),
        "key with S = 7 and value with S = 6": (q, k, _randn(gen, 2, 6, 3)),
        "an attn_mask of shape (5, 6) for scores of shape (2, 5, 7)":
            (q, k, v, torch.ones(5, 6, dtype=torch.bool)),
    }
    with guarded(sdpa):
        for what, args in cases.items():
            expect_value_error(sdpa, args, f"attention with {what}")


def sdpa_does_not_call_torch_attention(sdpa: Callable) -> None:
    """scaled_dot_product_attention neither calls nor refers to torch's attention functions."""
    found = _forbidden_references(sdpa)
    if found:
        fail(f"scaled_dot_product_attention refers to {found[0]}, which this exercise forbids")
    own_attention(sdpa, "sdpa")
    gen = torch.Generator().manual_seed(10)
    q, k, v = _randn(gen, 1, 3, 4), _randn(gen, 1, 5, 4), _randn(gen, 1, 5, 2)
    for kwargs in ({}, {"is_causal": True}, {"attn_mask": torch.ones(3, 5, dtype=torch.bool)}):
        _sdpa(sdpa, q, k, v, what=f"attention with {kwargs or 'no mask'}", **kwargs)


