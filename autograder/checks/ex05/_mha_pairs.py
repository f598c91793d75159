"""ex05's ``MultiHeadAttention`` beside torch's ``nn.MultiheadAttention`` with the same
weights: the learner's module built (by command, for a proxy) and loaded with the builtin's
weights, both run on the same inputs, and their outputs compared with the usual mistakes
named (the checks in :mod:`.mha` use these)."""

from __future__ import annotations

import torch
from torch import nn

from autograder import diagnose_heads, kernel_modules
from autograder.checks.ex05._common import ATOL, RTOL, _call, _np, _randn, _tensor, ref
from autograder.remote import RemoteModule
from autograder.testing import assert_close, explain, fail, raised


def submodules(module) -> dict[str, dict]:
    """name -> facts of ``module`` and its submodules
    (:func:`autograder.kernel_modules.describe_modules`): asked of the kernel for a learner's
    module there, read from the module itself otherwise."""
    if isinstance(module, RemoteModule):
        return dict(module.describe_modules())
    return dict(kernel_modules.describe_modules(module))


def _build(cls, d_model: int, num_heads: int, bias: bool = True):
    what = f"MultiHeadAttention({d_model}, {num_heads}, bias={bias})"
    module = _call(cls, d_model, num_heads, bias=bias, what=what)
    if not isinstance(module, nn.Module):
        fail(f"{what} should be a torch.nn.Module, got {type(module).__name__}")
    layers = submodules(module)
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        layer = layers.get(name)
        if layer is None or "in_features" not in layer:
            fail(f"{what}.{name} should be an nn.Linear, got "
                 f"{layer['type'] if layer else 'no such submodule'}")
        if (layer["in_features"], layer["out_features"]) != (d_model, d_model):
            fail(f"{what}.{name} should map {d_model} -> {d_model} features, got "
                 f"{layer['in_features']} -> {layer['out_features']}")
        if layer["bias"] != bias:
            fail(f"{what}.{name} should {'have' if bias else 'not have'} a bias")
    return module


def _state_from_builtin(builtin: nn.MultiheadAttention) -> dict:
    """The parameters of ``builtin`` under the names of the exercise's submodules."""
    d_model, out = builtin.embed_dim, {}
    for i, name in enumerate(("q_proj", "k_proj", "v_proj")):
        out[f"{name}.weight"] = builtin.in_proj_weight[i * d_model:(i + 1) * d_model].detach()
        if builtin.in_proj_bias is not None:
            out[f"{name}.bias"] = builtin.in_proj_bias[i * d_model:(i + 1) * d_model].detach()
    out["out_proj.weight"] = builtin.out_proj.weight.detach()
    if builtin.out_proj.bias is not None:
        out["out_proj.bias"] = builtin.out_proj.bias.detach()
    return out


def _load(module, builtin: nn.MultiheadAttention, what: str):
    """``module`` on ``builtin``'s device and dtype, holding its weights (loaded with
    ``load_state_dict``, by command for a learner's module in the kernel)."""
    weight = builtin.in_proj_weight
    module.to(weight.device, weight.dtype)
    try:
        keys = module.load_state_dict(_state_from_builtin(builtin), strict=False)
    except Exception as exc:  # noqa: BLE001 - a learner's module may refuse anything
        fail(f"{what}: loading the weights of nn.MultiheadAttention into q_proj, k_proj, "
             f"v_proj and out_proj raised {raised(exc)}")
    if keys.unexpected_keys:
        fail(f"{what} has no parameters {', '.join(keys.unexpected_keys[:4])}")
    return module


def _pair(cls, d_model: int, num_heads: int, bias: bool, device: str, seed: int):
    """(learner's module, nn.MultiheadAttention, reference module), all with the same weights."""
    torch.manual_seed(seed)
    builtin = nn.MultiheadAttention(d_model, num_heads, bias=bias, batch_first=True)
    builtin = builtin.to(device, torch.float64).eval()
    with torch.no_grad():  # random biases too (torch initialises in_proj_bias to zero)
        for p in builtin.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    what = f"MultiHeadAttention({d_model}, {num_heads}, bias={bias})"
    mine = _load(_build(cls, d_model, num_heads, bias), builtin, what)
    oracle = ref.copy_weights_from_torch(ref.MultiHeadAttention(d_model, num_heads, bias=bias), builtin)
    return mine, builtin, oracle


def _pair_and_inputs(cls, B: int, L: int, S: int, d: int, h: int, device: str, seed: int):
    """(the three modules of :func:`_pair` with a bias, the generator, queries x (B, L, d),
    keys and values y (B, S, d))."""
    modules = _pair(cls, d, h, True, device, seed)
    gen = torch.Generator().manual_seed(seed)
    x, y = _randn(gen, B, L, d, device=device), _randn(gen, B, S, d, device=device)
    return modules, gen, x, y


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


def _compare(weights, out, expected, what, q, k, v, num_heads, attn_mask=None,
             is_causal=False):
    """assert_close, with the diagnosis of the usual mistakes (scale, head split or merge,
    mask convention) when it fails; see :func:`autograder.diagnose_heads.multi_head_hint`
    (``weights``: a module holding the learner's module's weights, the reference here)."""
    with explain(lambda: diagnose_heads.multi_head_hint(weights, out, q, k, v, attn_mask, is_causal,
                                                  num_heads=num_heads)):
        assert_close(_np(out), _np(expected), what, rtol=RTOL, atol=ATOL)
