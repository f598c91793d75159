"""Shared by the ex05 checks: how "compute attention yourself" is judged, tensor helpers
and oracles.

Graded by the trusted checker (the learner's function or class a
:class:`autograder.remote.Remote`), the rule is judged by construction: the learner's cells
run again in a fresh Python where torch's attention operators are switched off
(:mod:`._probe`); every test of a graded part first requires that part to return there what
it returns in the kernel (:func:`own_attention`). Called with the learner's objects
themselves (the course's own tests), each call runs with torch's attention functions
replaced by ones that raise (:func:`forbid_torch_attention`) and the code is read for
references to them (:func:`_forbidden_references`)."""

from __future__ import annotations

import contextlib
import types
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from autograder.remote import Remote
from autograder.checks import knowledge as _knowledge  # bound now: private in the kernel
from autograder.checks.ex05 import _probe
from autograder.reference import torch_attention as ref
from autograder import diagnose
from autograder.testing import (
    CheckFailed,
    assert_close,
    call_learner,
    check_tensor,
    explain,
    fail,
    referenced_values,
)

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


def guarded(fn):
    """:func:`forbid_torch_attention` around calls of the learner's own objects; nothing
    for a :class:`Remote` (the checker's torch is not the kernel's: the probe judges)."""
    return contextlib.nullcontext([]) if isinstance(fn, Remote) else forbid_torch_attention()


def prefetch(notebook, timeout: float) -> None:
    """What ``check`` starts before the kernel runs the learner's cells: the probe of
    ``notebook`` on every device the checks use (:func:`._probe.prefetch`)."""
    _probe.prefetch(notebook, DEVICES, timeout)


def own_attention(learner, part: str) -> None:
    """Fail unless the learner's ``part`` (``sdpa``: the function; ``mha``: the class)
    returns, in a Python where torch's attention operators are switched off, what it returns
    in the kernel (:func:`autograder.checks.ex05._probe.verdict`). Nothing to do for the
    learner's objects themselves (their calls run under :func:`forbid_torch_attention`)."""
    if isinstance(learner, Remote):
        problem = _probe.verdict(part, learner, DEVICES)
        if problem:
            fail(problem)


def _call(fn: Callable, *args, what: str, **kwargs):
    """Call the learner's code under the guard and without autograd; fail with a clear message."""
    if isinstance(fn, Remote):  # in the kernel, under the checker's torch.no_grad()
        return call_learner(fn, *args, what=what, within=torch.no_grad(), **kwargs)
    with forbid_torch_attention() as calls:
        try:
            out = call_learner(fn, *args, what=what, within=torch.no_grad(), **kwargs)
        except CheckFailed:
            if calls:  # the learner's code raised because it called a forbidden function
                fail(_forbidden_message(what, calls))
            raise
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
    if any(isinstance(o, Remote) for o in objects):
        return []  # the kernel's objects: judged by the probe, never read here
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
        for _, v in referenced_values(obj, names):
            if id(v) in _FORBIDDEN_OBJECTS:
                found.append(_FORBIDDEN_OBJECTS[id(v)])
            elif isinstance(v, (types.FunctionType, type)) and getattr(v, "__module__", None) in home:
                stack.append(v)
    return sorted(set(found))


# --- helpers --------------------------------------------------------------------------------


def _tensor(value, shape: tuple, what: str, device: str | None = None) -> torch.Tensor:
    """Check ``value`` is a tensor of ``shape`` (on ``device``) and return it."""
    return check_tensor(value, shape, what, device=device)


def _np(t: torch.Tensor) -> np.ndarray:
    """The values of a learner's tensor as a plain float64 array; a tensor subclass's
    __torch_function__ is not consulted (it could answer any comparison)."""
    with torch._C.DisableTorchFunctionSubclass():
        return np.array(torch.Tensor.numpy(t.detach().to("cpu", torch.float64)))


def _randn(gen: torch.Generator, *shape, device="cpu", dtype=torch.float64, scale=1.0):
    return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).to(device, dtype)


def _sdpa(sdpa: Callable, q, k, v, *, what: str, attn_mask=None, is_causal=False, device=None):
    """Call the learner's attention and check the output's type, shape and device (from
    the data the kernel sent, for a :class:`Remote`)."""
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


knowledge_check = _knowledge.check_for("ex05_torch_attention", __name__)
