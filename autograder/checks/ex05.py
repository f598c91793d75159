"""Checks for ``ex05_torch_attention`` (scaled_dot_product_attention and MultiHeadAttention).

Every call of the learner's code runs with torch's attention functions and modules
replaced by functions that record the call and raise (:func:`forbid_torch_attention`), so
code that delegates to ``F.scaled_dot_product_attention`` or ``nn.MultiheadAttention``
earns no points. The oracles are torch's own functions, called outside that guard, and the
reference in :mod:`autograder.reference.torch_attention`. Checks run on the CPU and, when
one is present, on a CUDA device too. Values are compared in float64 after the type,
shape and device checks; dtypes are checked only where they are the behaviour under test.
"""

from __future__ import annotations

import contextlib
import types
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from autograder.reference import torch_attention as ref
from autograder import diagnose
from autograder.testing import assert_close, expect_value_error, explain, fail

DEVICES = ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)
RTOL, ATOL = 1e-7, 1e-9  # float64 everywhere unless a check says otherwise

# torch's own attention: the oracle (called outside the guard) and what the guard forbids.
_TORCH_SDPA = torch._C._nn.scaled_dot_product_attention
_FORBIDDEN_ATTRS = [
    (F, "scaled_dot_product_attention", "torch.nn.functional.scaled_dot_product_attention"),
    (torch._C._nn, "scaled_dot_product_attention", "torch._C._nn.scaled_dot_product_attention"),
    (F, "multi_head_attention_forward", "torch.nn.functional.multi_head_attention_forward"),
    (nn.MultiheadAttention, "forward", "torch.nn.MultiheadAttention.forward"),
] + [(torch, name, f"torch.{name}") for name in dir(torch)
     if "scaled_dot_product" in name or "multi_head_attention" in name]
_FORBIDDEN_OBJECTS = {id(nn.MultiheadAttention): "torch.nn.MultiheadAttention"}
for _owner, _name, _label in _FORBIDDEN_ATTRS:
    _FORBIDDEN_OBJECTS.setdefault(id(getattr(_owner, _name)), _label)


class _ForbiddenCall(RuntimeError):
    pass


@contextlib.contextmanager
def forbid_torch_attention():
    """Within the block, torch's attention functions and modules record the call and raise.

    Yields the list of the names of forbidden functions called so far (empty when none).
    """
    calls: list[str] = []

    def forbidden(label):
        def f(*args, **kwargs):
            calls.append(label)
            raise _ForbiddenCall(f"{label} may not be used in this exercise")
        return f

    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in _FORBIDDEN_ATTRS]
    try:
        for owner, name, label in _FORBIDDEN_ATTRS:
            setattr(owner, name, forbidden(label))
        yield calls
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _forbidden_message(what: str, calls: list[str]) -> str:
    return (f"{what}: calls {calls[0]}, which this exercise forbids; compute the attention "
            "yourself (matrix products, a mask and a softmax)")


def _call(fn: Callable, *args, what: str, **kwargs):
    """Call the learner's code under the guard and without autograd; fail with a clear message."""
    with forbid_torch_attention() as calls:
        try:
            with torch.no_grad():
                out = fn(*args, **kwargs)
        except NotImplementedError:
            fail(f"{what}: not implemented yet (the stub raises NotImplementedError)")
        except Exception as exc:  # noqa: BLE001 - a learner's code may raise anything
            if calls:
                fail(_forbidden_message(what, calls))
            fail(f"{what}: raised {type(exc).__name__}: {exc}")
    if calls:
        fail(_forbidden_message(what, calls))
    return out


def _forbidden_references(*objects) -> list[str]:
    """Forbidden torch objects that the learner's functions or classes refer to by a name.

    Follows the learner's own helpers (functions and classes defined in the same module) and
    closures; a reference such as ``from torch.nn.functional import
    scaled_dot_product_attention as sdpa`` is caught here even though the guard cannot
    replace it.
    """
    found, seen, stack = [], set(), list(objects)
    home = {getattr(o, "__module__", None) for o in objects}
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, type):
            stack.extend(v for v in vars(obj).values()
                         if isinstance(v, (types.FunctionType, staticmethod, classmethod, property, type)))
            continue
        if isinstance(obj, (staticmethod, classmethod)):
            stack.append(obj.__func__)
            continue
        if isinstance(obj, property):
            stack.extend(f for f in (obj.fget, obj.fset) if f is not None)
            continue
        code = getattr(obj, "__code__", None)
        if code is None:
            continue
        names, codes = set(), [code]
        while codes:
            c = codes.pop()
            names.update(c.co_names)
            codes.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        values = [obj.__globals__[n] for n in names if n in getattr(obj, "__globals__", {})]
        for cell in getattr(obj, "__closure__", None) or ():
            try:
                values.append(cell.cell_contents)
            except ValueError:
                pass
        for v in values:
            if id(v) in _FORBIDDEN_OBJECTS:
                found.append(_FORBIDDEN_OBJECTS[id(v)])
            elif isinstance(v, (types.FunctionType, type)) and getattr(v, "__module__", None) in home:
                stack.append(v)
    return sorted(set(found))


# --- helpers --------------------------------------------------------------------------------


def _tensor(value, shape: tuple, what: str, device: str | None = None) -> torch.Tensor:
    """Check ``value`` is a tensor of ``shape`` (on ``device``) and return it."""
    if not isinstance(value, torch.Tensor):
        fail(f"{what} should be a torch.Tensor, got {type(value).__name__}")
    if tuple(value.shape) != tuple(shape):
        fail(f"{what}: shape should be {tuple(shape)}, got {tuple(value.shape)}")
    if device is not None and value.device.type != torch.device(device).type:
        fail(f"{what}: should be on {device} like its inputs, got {value.device}")
    return value


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to("cpu", torch.float64).numpy()


def _randn(gen: torch.Generator, *shape, device="cpu", dtype=torch.float64, scale=1.0):
    return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).to(device, dtype)


def _some_true_per_row(gen: torch.Generator, shape: tuple, p: float = 0.6) -> torch.Tensor:
    """A random boolean mask with at least one True in every row."""
    m = torch.rand(*shape, generator=gen) < p
    idx = torch.randint(0, shape[-1], shape[:-1], generator=gen)
    m.scatter_(-1, idx.unsqueeze(-1), True)
    return m


def _sdpa(sdpa: Callable, q, k, v, *, what: str, attn_mask=None, is_causal=False, device=None):
    """Call the learner's attention and check the output's type, shape and device."""
    kwargs = {}
    if attn_mask is not None:
        kwargs["attn_mask"] = attn_mask
    if is_causal:
        kwargs["is_causal"] = True
    out = _call(sdpa, q, k, v, what=what, **kwargs)
    return _tensor(out, (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2],
                         v.shape[-1]), what, device)


def _torch_sdpa(q, k, v, attn_mask=None, is_causal=False):
    with torch.no_grad():
        return _TORCH_SDPA(q, k, v, attn_mask=attn_mask, is_causal=is_causal)


def _hint(out, q, k, v, attn_mask, is_causal) -> str:
    """The common mistake ``out`` matches (no scale, d_k, inverted mask...): see diagnose."""
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        return ""  # float masks are added to the scores: no boolean meaning to invert
    mask = None if attn_mask is None else _np(attn_mask).astype(bool)
    if is_causal:
        mask = np.tril(np.ones((q.shape[-2], k.shape[-2]), dtype=bool))
    return diagnose.attention_hint(_np(out), _np(q), _np(k), _np(v), mask)


def _compare(out, q, k, v, what, *, attn_mask=None, is_causal=False, rtol=RTOL, atol=ATOL,
             with_torch=True):
    """Compare with the reference and, where it applies, with torch's built-in."""
    expected = ref.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
    with explain(lambda: _hint(out, q, k, v, attn_mask, is_causal)):
        assert_close(_np(out), _np(expected), what, rtol=rtol, atol=atol)
    if with_torch:
        builtin = _torch_sdpa(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
        assert_close(_np(out), _np(builtin), f"{what} (against torch's built-in)", rtol=rtol, atol=atol)


# --- scaled_dot_product_attention ------------------------------------------------------------


def sdpa_matches_torch(sdpa: Callable, seed: int = 1) -> None:
    """Unmasked attention of random inputs (2-D to 4-D, L != S, E != E_v) equals torch's."""
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
    gen = torch.Generator().manual_seed(seed)
    B, H, L, S, E = 2, 3, 4, 6, 5
    for device in DEVICES:
        q, k, v = (_randn(gen, B, H, T, E, device=device) for T in (L, S, S))
        lengths = torch.tensor([4, 6])
        masks = {
            "(L, S)": _some_true_per_row(gen, (L, S)),
            "(B, 1, 1, S) padding": (torch.arange(S) < lengths[:, None])[:, None, None, :],
            "(B, 1, L, S)": _some_true_per_row(gen, (B, 1, L, S)),
            "(B, H, L, S)": _some_true_per_row(gen, (B, H, L, S)),
        }
        for name, mask in masks.items():
            mask = mask.to(device)
            what = f"attention with a boolean {name} mask on {device}"
            out = _sdpa(sdpa, q, k, v, what=what, attn_mask=mask, device=device)
            _compare(out, q, k, v, what, attn_mask=mask)


def sdpa_float_mask(sdpa: Callable, seed: int = 3) -> None:
    """A float attn_mask is added to the scores (finite values and some -inf)."""
    gen = torch.Generator().manual_seed(seed)
    B, H, L, S, E = 2, 2, 4, 5, 3
    for device in DEVICES:
        q, k, v = (_randn(gen, B, H, T, E, device=device) for T in (L, S, S))
        bias = _randn(gen, L, S, scale=2.0)
        blocked = torch.where(_some_true_per_row(gen, (B, 1, L, S)), 0.0, float("-inf"))
        for name, mask in (("(L, S) of finite values", bias), ("(B, 1, L, S) of 0 and -inf", blocked)):
            mask = mask.to(device, torch.float64)
            what = f"attention with a float {name} mask on {device}"
            out = _sdpa(sdpa, q, k, v, what=what, attn_mask=mask, device=device)
            _compare(out, q, k, v, what, attn_mask=mask)


def sdpa_masked_far_scores(sdpa: Callable, seed: int = 4) -> None:
    """Masked keys get weight 0 even when every allowed score is around -2e4 (no finite fill)."""
    gen = torch.Generator().manual_seed(seed)
    L, S, E = 4, 6, 4
    c = (2e4 * E ** 0.5) ** 0.5  # first coordinates give every score an offset of -2e4
    for device in DEVICES:
        q = torch.cat([torch.full((2, L, 1), c, dtype=torch.float64), _randn(gen, 2, L, E - 1)], -1)
        k = torch.cat([torch.full((2, S, 1), -c, dtype=torch.float64), _randn(gen, 2, S, E - 1)], -1)
        v = _randn(gen, 2, S, 3)
        mask = _some_true_per_row(gen, (2, L, S), p=0.5)
        q, k, v, mask = q.to(device), k.to(device), v.to(device), mask.to(device)
        what = f"attention with a boolean mask and scores around -2e4 on {device}"
        out = _sdpa(sdpa, q, k, v, what=what, attn_mask=mask, device=device)
        _compare(out, q, k, v, what, attn_mask=mask, rtol=1e-6, atol=1e-8)


def sdpa_fully_masked_rows(sdpa: Callable, seed: int = 5) -> None:
    """A query that may attend to no key gets a zero output, never NaN (bool and float masks)."""
    gen = torch.Generator().manual_seed(seed)
    B, H, L, S, E = 2, 2, 4, 5, 3
    for device in DEVICES:
        q, k, v = (_randn(gen, B, H, T, E, device=device) for T in (L, S, S))
        mask = _some_true_per_row(gen, (B, H, L, S))
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
                if not torch.allclose(out2[..., : t + 1, :], out[..., : t + 1, :], rtol=1e-12, atol=1e-12):
                    fail(f"{w2}: outputs at positions 0..{t} changed, so the future leaks into the past")


def sdpa_dtype_and_device(sdpa: Callable, seed: int = 7) -> None:
    """float32 stays float32 and float64 stays float64, on the device of the inputs."""
    gen = torch.Generator().manual_seed(seed)
    for device in DEVICES:
        for dtype, tol in ((torch.float32, 1e-5), (torch.float64, 1e-10)):
            q, k, v = (_randn(gen, 2, T, 4, device=device, dtype=dtype) for T in (3, 5, 5))
            mask = _some_true_per_row(gen, (3, 5)).to(device)
            for m in (None, mask):
                what = f"attention of {dtype} inputs on {device}" + ("" if m is None else " with a mask")
                out = _sdpa(sdpa, q, k, v, what=what, attn_mask=m, device=device)
                if out.dtype != dtype:
                    fail(f"{what}: the output should be {dtype}, got {out.dtype}")
                _compare(out, q, k, v, what, attn_mask=m, rtol=tol, atol=tol, with_torch=False)


def sdpa_half_precision(sdpa: Callable, seed: int = 8) -> None:
    """float16 and bfloat16 come back in their dtype, computed in float32 (no overflow at 1e5)."""
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
    gen = torch.Generator().manual_seed(9)
    q, k, v = _randn(gen, 2, 5, 4), _randn(gen, 2, 7, 4), _randn(gen, 2, 7, 3)
    _sdpa(sdpa, q, k, v, what="attention of valid inputs")
    cases = {
        "query with E = 4 and key with E = 3": (q, _randn(gen, 2, 7, 3), v),
        "key with S = 7 and value with S = 6": (q, k, _randn(gen, 2, 6, 3)),
        "an attn_mask of shape (5, 6) for scores of shape (2, 5, 7)":
            (q, k, v, torch.ones(5, 6, dtype=torch.bool)),
    }
    with forbid_torch_attention():
        for what, args in cases.items():
            expect_value_error(sdpa, args, f"attention with {what}")


def sdpa_does_not_call_torch_attention(sdpa: Callable) -> None:
    """scaled_dot_product_attention neither calls nor refers to torch's attention functions."""
    found = _forbidden_references(sdpa)
    if found:
        fail(f"scaled_dot_product_attention refers to {found[0]}, which this exercise forbids")
    gen = torch.Generator().manual_seed(10)
    q, k, v = _randn(gen, 1, 3, 4), _randn(gen, 1, 5, 4), _randn(gen, 1, 5, 2)
    for kwargs in ({}, {"is_causal": True}, {"attn_mask": torch.ones(3, 5, dtype=torch.bool)}):
        _sdpa(sdpa, q, k, v, what=f"attention with {kwargs or 'no mask'}", **kwargs)


# --- MultiHeadAttention ----------------------------------------------------------------------


def _build(cls, d_model: int, num_heads: int, bias: bool = True):
    what = f"MultiHeadAttention({d_model}, {num_heads}, bias={bias})"
    module = _call(cls, d_model, num_heads, bias=bias, what=what)
    if not isinstance(module, nn.Module):
        fail(f"{what} should be a torch.nn.Module, got {type(module).__name__}")
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        layer = getattr(module, name, None)
        if not isinstance(layer, nn.Linear):
            fail(f"{what}.{name} should be an nn.Linear, got {type(layer).__name__}")
        if (layer.in_features, layer.out_features) != (d_model, d_model):
            fail(f"{what}.{name} should map {d_model} -> {d_model} features, got "
                 f"{layer.in_features} -> {layer.out_features}")
        if (layer.bias is not None) != bias:
            fail(f"{what}.{name} should {'have' if bias else 'not have'} a bias")
    return module


def _pair(cls, d_model: int, num_heads: int, bias: bool, device: str, seed: int):
    """(learner's module, nn.MultiheadAttention, reference module), all with the same weights."""
    torch.manual_seed(seed)
    builtin = nn.MultiheadAttention(d_model, num_heads, bias=bias, batch_first=True)
    builtin = builtin.to(device, torch.float64).eval()
    with torch.no_grad():  # random biases too (torch initialises in_proj_bias to zero)
        for p in builtin.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    mine = ref.copy_weights_from_torch(_build(cls, d_model, num_heads, bias), builtin)
    oracle = ref.copy_weights_from_torch(ref.MultiHeadAttention(d_model, num_heads, bias=bias), builtin)
    return mine, builtin, oracle


def _builtin_mask(mask: torch.Tensor, B: int, h: int) -> torch.Tensor:
    """Our mask -> nn.MultiheadAttention's: bool inverted (True = masked out), (B*h, L, S)."""
    if mask.dim() == 4:
        mask = mask.expand(B, h, *mask.shape[-2:]).reshape(B * h, *mask.shape[-2:])
    return ~mask if mask.dtype == torch.bool else mask


def _forward(module, *args, what: str, shape: tuple, device: str, **kwargs):
    out = _call(module, *args, what=what, **kwargs)
    return _tensor(out, shape, what, device)


def _builtin_forward(builtin, q, k, v, attn_mask=None):
    with torch.no_grad():
        return builtin(q, k, v, attn_mask=attn_mask, need_weights=False)[0]


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
    configs = [(2, 5, 5, 8, 2, True), (2, 4, 6, 12, 3, True), (1, 3, 3, 16, 4, False),
               (3, 6, 2, 8, 8, True)]
    for device in DEVICES:
        for B, L, S, d, h, bias in configs:
            mine, builtin, _ = _pair(cls, d, h, bias, device, seed)
            gen = torch.Generator().manual_seed(seed)
            x, y, z = _randn(gen, B, L, d, device=device), _randn(gen, B, S, d, device=device), \
                _randn(gen, B, S, d, device=device)
            name = f"MultiHeadAttention({d}, {h}, bias={bias}) on {device}"
            what = f"{name}, self-attention of (B, L, d_model) = {(B, L, d)}"
            out = _forward(mine, x, x, x, what=what, shape=(B, L, d), device=device)
            assert_close(_np(out), _np(_builtin_forward(builtin, x, x, x)), what, rtol=RTOL, atol=ATOL)
            what = f"{name}, cross-attention from L = {L} to S = {S} with different key and value"
            out = _forward(mine, x, y, z, what=what, shape=(B, L, d), device=device)
            assert_close(_np(out), _np(_builtin_forward(builtin, x, y, z)), what, rtol=RTOL, atol=ATOL)


def mha_masks(cls, seed: int = 12) -> None:
    """attn_mask (L, S), (B, 1, L, S) and (B, num_heads, L, S), boolean and float, as torch's (inverted)."""
    B, L, S, d, h = 2, 4, 5, 8, 2
    for device in DEVICES:
        mine, builtin, _ = _pair(cls, d, h, True, device, seed)
        gen = torch.Generator().manual_seed(seed)
        x, y = _randn(gen, B, L, d, device=device), _randn(gen, B, S, d, device=device)
        masks = {
            "a boolean (L, S) mask": _some_true_per_row(gen, (L, S)),
            "a boolean (B, 1, L, S) mask": _some_true_per_row(gen, (B, 1, L, S)),
            "a boolean (B, num_heads, L, S) mask": _some_true_per_row(gen, (B, h, L, S)),
            "a float (L, S) mask": _randn(gen, L, S, scale=2.0),
            "a float (B, num_heads, L, S) mask of 0 and -inf":
                torch.where(_some_true_per_row(gen, (B, h, L, S)), 0.0, float("-inf")).double(),
        }
        for name, mask in masks.items():
            mask = mask.to(device)
            what = f"MultiHeadAttention({d}, {h}) on {device} with {name}"
            out = _forward(mine, x, y, y, attn_mask=mask, what=what, shape=(B, L, d), device=device)
            expected = _builtin_forward(builtin, x, y, y, attn_mask=_builtin_mask(mask, B, h))
            assert_close(_np(out), _np(expected), what, rtol=RTOL, atol=ATOL)


def mha_is_causal(cls, seed: int = 13) -> None:
    """is_causal=True equals torch with the causal mask, and the future does not leak back."""
    d, h = 8, 2
    for device in DEVICES:
        mine, builtin, _ = _pair(cls, d, h, True, device, seed)
        gen = torch.Generator().manual_seed(seed)
        for L, S in ((5, 5), (3, 6)):
            x, y = _randn(gen, 2, L, d, device=device), _randn(gen, 2, S, d, device=device)
            if L == S:
                y = x
            what = f"MultiHeadAttention({d}, {h}) on {device} with is_causal=True, L = {L}, S = {S}"
            out = _forward(mine, x, y, y, is_causal=True, what=what, shape=(2, L, d), device=device)
            causal = torch.ones(L, S, dtype=torch.bool, device=device).tril()
            expected = _builtin_forward(builtin, x, y, y, attn_mask=~causal)
            assert_close(_np(out), _np(expected), what, rtol=RTOL, atol=ATOL)
        x = _randn(gen, 2, 6, d, device=device)
        base = _forward(mine, x, is_causal=True, what="self-attention with is_causal=True",
                        shape=(2, 6, d), device=device)
        for t in range(5):
            x2 = x.clone()
            x2[:, t + 1:] = _randn(gen, 2, 5 - t, d, device=device, scale=5.0)
            what = f"causal self-attention on {device} after changing the tokens after position {t}"
            out = _forward(mine, x2, is_causal=True, what=what, shape=(2, 6, d), device=device)
            if not torch.allclose(out[:, : t + 1], base[:, : t + 1], rtol=1e-12, atol=1e-12):
                fail(f"{what}: outputs at positions 0..{t} changed, so the future leaks into the past")


def mha_key_value_default(cls, seed: int = 14) -> None:
    """forward(x) and forward(x, attn_mask=m) equal forward(x, x, x, ...): key and value default to query."""
    d, h = 8, 2
    mine, _, _ = _pair(cls, d, h, True, "cpu", seed)
    gen = torch.Generator().manual_seed(seed)
    x = _randn(gen, 2, 5, d)
    mask = _some_true_per_row(gen, (5, 5))
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
    B, L, S, d, h = 2, 4, 5, 8, 2
    for device in DEVICES:
        mine, _, oracle = _pair(cls, d, h, True, device, seed)
        gen = torch.Generator().manual_seed(seed)
        x, y = _randn(gen, B, L, d, device=device), _randn(gen, B, S, d, device=device)
        mask = _some_true_per_row(gen, (B, h, L, S))
        mask[0, :, 1] = False  # query (0, 1): no key in any head
        mask[1, 0, 2] = False  # query (1, 2): no key in head 0 only
        mask = mask.to(device)
        what = f"MultiHeadAttention({d}, {h}) on {device} with fully masked queries"
        got = _np(_forward(mine, x, y, y, attn_mask=mask, what=what, shape=(B, L, d), device=device))
        if not np.isfinite(got).all():
            fail(f"{what}: the output has NaN or inf; a query with no key should give zeros "
                 "before the output projection")
        assert_close(got[0, 1], _np(mine.out_proj.bias), f"{what}: query (0, 1), masked in every "
                     "head, should give out_proj of a zero vector", rtol=RTOL, atol=ATOL)
        with torch.no_grad():
            expected = _np(oracle(x, y, y, attn_mask=mask))
        assert_close(got, expected, what, rtol=RTOL, atol=ATOL)


def mha_permutation_equivariant(cls, seed: int = 16) -> None:
    """Permuting the tokens of self-attention permutes its output the same way."""
    d, h, L = 12, 3, 7
    mine, _, _ = _pair(cls, d, h, True, "cpu", seed)
    gen = torch.Generator().manual_seed(seed)
    x = _randn(gen, 2, L, d)
    perm = torch.randperm(L, generator=gen)
    out = _forward(mine, x, what="self-attention", shape=(2, L, d), device="cpu")
    out_p = _forward(mine, x[:, perm], what="self-attention of permuted tokens", shape=(2, L, d),
                     device="cpu")
    assert_close(_np(out_p), _np(out[:, perm]), "self-attention of permuted tokens against the "
                 "permuted output", rtol=1e-9, atol=1e-10)


def mha_does_not_call_torch_attention(cls) -> None:
    """MultiHeadAttention neither calls nor holds torch's attention functions or modules."""
    found = _forbidden_references(cls)
    if found:
        fail(f"MultiHeadAttention refers to {found[0]}, which this exercise forbids")
    module = _build(cls, 8, 2)
    for name, sub in module.named_modules():
        if isinstance(sub, nn.MultiheadAttention):
            fail(f"MultiHeadAttention holds an nn.MultiheadAttention ({name}), which this "
                 "exercise forbids")
    x = torch.randn(1, 3, 8)
    _forward(module, x, what="MultiHeadAttention(8, 2) on (1, 3, 8)", shape=(1, 3, 8), device="cpu")
    _forward(module, x, is_causal=True, what="MultiHeadAttention(8, 2) with is_causal=True",
             shape=(1, 3, 8), device="cpu")
