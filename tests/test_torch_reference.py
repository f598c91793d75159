"""The PyTorch reference (ex05) against torch's own functions, on the CPU and on CUDA when present."""

from __future__ import annotations

import runpy
import types
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from autograder.checks import ex05
from autograder.checks.ex05 import _probe
from autograder.reference.torch_attention import (
    MultiHeadAttention,
    copy_weights_from_torch,
    scaled_dot_product_attention,
)

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device on this machine"))]


def _randn(gen, *shape, device, dtype=torch.float64):
    return torch.randn(*shape, generator=gen, dtype=torch.float64).to(device, dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("batch,L,S,E,E_v", [((), 4, 4, 8, 8), ((2,), 3, 7, 5, 2),
                                             ((2, 3), 6, 2, 4, 3), ((1, 1), 1, 1, 2, 1)])
def test_sdpa_matches_torch(device, batch, L, S, E, E_v):
    gen = torch.Generator().manual_seed(L * 10 + S)
    q, k, v = (_randn(gen, *batch, T, d, device=device) for T, d in ((L, E), (S, E), (S, E_v)))
    bool_mask = (torch.rand(L, S, generator=gen) < 0.6).to(device)
    bool_mask[:, 0] = True
    float_mask = _randn(gen, L, S, device=device)
    for kwargs in ({}, {"is_causal": True}, {"attn_mask": bool_mask}, {"attn_mask": float_mask}):
        out = scaled_dot_product_attention(q, k, v, **kwargs)
        assert out.device.type == device and out.dtype == torch.float64
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, **kwargs))


@pytest.mark.parametrize("device", DEVICES)
def test_fully_masked_rows_are_zero(device):
    gen = torch.Generator().manual_seed(0)
    q, k, v = (_randn(gen, 2, 2, T, 4, device=device) for T in (3, 5, 5))
    mask = torch.ones(2, 2, 3, 5, dtype=torch.bool, device=device)
    mask[0, 1, 2] = False
    out = scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.all(out[0, 1, 2] == 0)
    keep = mask.any(-1)
    torch.testing.assert_close(out[keep], F.scaled_dot_product_attention(q, k, v, attn_mask=mask)[keep])
    minus_inf = torch.where(mask, 0.0, float("-inf")).double()
    assert torch.all(scaled_dot_product_attention(q, k, v, attn_mask=minus_inf)[0, 1, 2] == 0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_dtype_kept_and_half_computed_in_float32(device, dtype):
    gen = torch.Generator().manual_seed(1)
    q, k, v = (_randn(gen, 2, T, 16, device=device, dtype=dtype) * 40 for T in (4, 6, 6))
    out = scaled_dot_product_attention(q, k, v)
    assert out.dtype == dtype and out.device.type == device
    assert torch.isfinite(out).all()  # q.k reaches about 16 * 1600 * ... beyond float16's range
    exact = scaled_dot_product_attention(q.double(), k.double(), v.double())
    torch.testing.assert_close(out.double(), exact, rtol=5e-2, atol=5e-1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("B,L,S,d_model,num_heads,bias", [(2, 5, 5, 8, 2, True), (3, 4, 7, 12, 3, False),
                                                          (1, 6, 2, 16, 8, True)])
def test_multihead_matches_torch(device, B, L, S, d_model, num_heads, bias):
    torch.manual_seed(0)
    builtin = nn.MultiheadAttention(d_model, num_heads, bias=bias, batch_first=True)
    builtin = builtin.to(device, torch.float64).eval()
    ours = copy_weights_from_torch(MultiHeadAttention(d_model, num_heads, bias=bias), builtin)
    gen = torch.Generator().manual_seed(2)
    x, y = _randn(gen, B, L, d_model, device=device), _randn(gen, B, S, d_model, device=device)
    masks = [torch.rand(L, S, generator=gen) < 0.6, torch.rand(B, 1, L, S, generator=gen) < 0.6,
             torch.rand(B, num_heads, L, S, generator=gen) < 0.6]
    with torch.no_grad():
        torch.testing.assert_close(ours(x, y), builtin(x, y, y, need_weights=False)[0])
        torch.testing.assert_close(ours(x), builtin(x, x, x, need_weights=False)[0])
        for m in masks:
            m[..., 0] = True
            m = m.to(device)
            theirs = m.expand(B, num_heads, L, S).reshape(B * num_heads, L, S) if m.dim() == 4 else m
            torch.testing.assert_close(ours(x, y, attn_mask=m),
                                       builtin(x, y, y, attn_mask=~theirs, need_weights=False)[0])
        causal = torch.ones(L, L, dtype=torch.bool, device=device).tril()
        torch.testing.assert_close(ours(x, is_causal=True),
                                   builtin(x, x, x, attn_mask=~causal, need_weights=False)[0])


@pytest.mark.parametrize("args,kwargs,fragment", [
    ((torch.zeros(2, 4), torch.zeros(3, 5), torch.zeros(3, 1)), {}, r"query has d_k = 4 \(shape \(2, 4\)\)"),
    ((torch.zeros(2, 4), torch.zeros(3, 4), torch.zeros(2, 1)), {}, r"key has S = 3 positions"),
    ((torch.zeros(2, 4), torch.zeros(3, 4), torch.zeros(3, 1)), {"attn_mask": torch.ones(2, 2, dtype=torch.bool)},
     r"attn_mask of shape \(2, 2\)"),
    ((torch.zeros(2, 4), torch.zeros(3, 4), torch.zeros(3, 1)),
     {"attn_mask": torch.ones(2, 3, dtype=torch.bool), "is_causal": True}, "not both"),
])
def test_errors_name_the_offending_shape(args, kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        scaled_dot_product_attention(*args, **kwargs)


def test_multihead_rejects_indivisible_and_bad_masks():
    with pytest.raises(ValueError, match="d_model = 10 is not divisible by num_heads = 3"):
        MultiHeadAttention(10, 3)
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"attn_mask must have shape .* got \(3, 3, 4\)"):
        mha(torch.zeros(3, 4, 8), attn_mask=torch.ones(3, 3, 4, dtype=torch.bool))


def test_reference_uses_no_torch_attention():
    with ex05.forbid_torch_attention() as calls:
        out = MultiHeadAttention(8, 2)(torch.randn(2, 3, 8), is_causal=True)
    assert not calls and out.shape == (2, 3, 8)
    assert ex05._forbidden_references(scaled_dot_product_attention, MultiHeadAttention) == []


def test_guard_catches_builtin_calls_and_restores():
    original = F.scaled_dot_product_attention
    with ex05.forbid_torch_attention() as calls:
        with pytest.raises(RuntimeError):
            F.scaled_dot_product_attention(torch.zeros(1, 2), torch.zeros(1, 2), torch.zeros(1, 2))
    assert calls == ["torch.nn.functional.scaled_dot_product_attention"]
    assert F.scaled_dot_product_attention is original


@pytest.mark.parametrize("name", sorted(n for n in dir(ex05) if n.startswith(("sdpa_", "mha_"))
                                         and n != "mha_hint"))  # a diagnosis, not a check
def test_every_check_passes_on_the_reference(name):
    target = MultiHeadAttention if name.startswith("mha_") else scaled_dot_product_attention
    getattr(ex05, name)(target)


def test_mha_hint_is_silent_for_the_reference_and_names_a_missing_out_proj():
    """ex05.mha_hint (the visible tests' diagnosis): '' for a right module, the mistake's
    name for a module whose forward skips out_proj."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2).double()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    with torch.no_grad():
        out = mha(x)
        assert ex05.mha_hint(mha, out, x) == ""
        wrong = mha(x) - mha.out_proj.bias  # not the mistake: a shifted output
        assert ex05.mha_hint(mha, wrong, x) == ""
        mha.out_proj.forward = lambda t: t  # the same module without its output projection
        no_out_proj = mha(x)
    assert "no output projection" in ex05.mha_hint(mha, no_out_proj, x)



def test_gpu_check_passes_on_this_machine():
    """benchmarks/gpu_check.py (the device run of chapter 5's and ex05's PyTorch code) stays
    runnable: on a machine without CUDA its CPU part passes; with CUDA, all of it."""
    gpu_check = runpy.run_path(str(Path(__file__).resolve().parent.parent / "benchmarks" / "gpu_check.py"))
    assert gpu_check["main"]() == 0, gpu_check["failures"]


def test_a_prefetched_probe_answer_is_taken_by_the_session_and_not_computed_again(monkeypatch):
    """``check``'s head start (ex05.prefetch): the probe starts from the notebook's source
    before the kernel runs it; the session of that notebook waits for that answer (one probe
    run, not two), and a session of other cells runs its own."""
    runs = []

    def probe_answer(cells, devices, timeout):
        runs.append(tuple(cells))
        return {"replies": [], "cells": list(cells)}

    monkeypatch.setattr(_probe, "_probe_answer", probe_answer)

    def notebook(source):
        cell = {"cell_type": "code", "source": source,
                "metadata": {"nbgrader": {"solution": True}}}
        return types.SimpleNamespace(cells=[types.SimpleNamespace(get=cell.get, **cell)])

    prefetched, other = notebook("def f(): return 1"), notebook("def f(): return 2")
    ex05.prefetch(prefetched, timeout=5)
    class Session:  # weakly referable and hashable by identity, as the checker's Session is
        def __init__(self, notebook, timeout):
            self.notebook, self.timeout = notebook, timeout

    session = Session(notebook=prefetched, timeout=5)
    assert _probe._answer(session, ex05.DEVICES)["cells"] == ["def f(): return 1"]
    assert _probe._answer(session, ex05.DEVICES)["cells"] == ["def f(): return 1"]  # cached
    assert runs == [("def f(): return 1",)]                                          # once
    session2 = Session(notebook=other, timeout=5)
    assert _probe._answer(session2, ex05.DEVICES)["cells"] == ["def f(): return 2"]
    assert runs == [("def f(): return 1",), ("def f(): return 2",)]
