"""What the kernel's thin client (:mod:`autograder.kernel_client`) does with a learner's torch
module, by the checker's command: its torch class and submodules' facts read, its parameters
and buffers read or loaded, ``train``/``eval``, and its inputs (or outputs) watched by a
forward hook, copied when seen and sent with the next reply. Through torch's base
``nn.Module`` methods, never the learner's overrides. A kernel file: it judges nothing."""

from __future__ import annotations

from typing import Callable

from autograder import wire
from autograder.wire_tensor import tensor_facts

# Forward hooks the checker asked for (capture number -> torch's removable handle), and the
# inputs (and outputs) they saw since the last reply, copied when they were seen.
CAPTURES: dict[int, object] = {}
CAPTURED: list = []
MAX_CAPTURED = 64  # per reply: a hook left on during a long loop keeps the first ones only

def loaded_torch():
    """torch, when the learner's code has imported it; else None."""
    import sys

    return sys.modules.get("torch")


def torch_class(obj) -> str:
    """``module.qualname`` of the first of torch's own classes in ``type(obj)``'s MRO (the
    class itself when it is torch's: ``torch.nn.modules.linear.Linear``), or ''. Found by
    identity in torch's modules, never from the object's attributes."""
    import sys

    for cls in type(obj).__mro__:
        mod = cls.__dict__.get("__module__")
        if type(mod) is str and mod.startswith("torch.") and getattr(
                sys.modules.get(mod), cls.__qualname__, None) is cls:
            return f"{mod}.{cls.__qualname__}"
    return ""


def snapshot(value, depth: int = 0):
    """``value`` with every tensor in it copied (a captured input the model may change in
    place afterwards)."""
    torch = loaded_torch()
    if depth > wire.MAX_DEPTH:
        return value
    if torch is not None and isinstance(value, torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():
            return torch.Tensor.detach(value).clone()
    if type(value) in (list, tuple):
        return type(value)(snapshot(v, depth + 1) for v in value)
    if type(value) is dict:
        return {k: snapshot(v, depth + 1) for k, v in value.items()}
    return value


def describe_modules(module) -> list:
    """``[name, facts]`` for ``module`` and every submodule (``nn.Module.named_modules``):
    facts are the type's name, its torch class (:func:`torch_class`) and, for torch's own
    layers, what defines them: ``in_features``, ``out_features`` and ``bias`` (whether it
    has one) of a Linear, ``normalized_shape``, ``eps`` and ``elementwise_affine`` of a
    LayerNorm, ``num_embeddings`` and ``embedding_dim`` of an Embedding, ``p`` of a Dropout,
    ``embed_dim`` and ``num_heads`` of a MultiheadAttention. Plain data only."""
    from torch import nn

    out = []
    for name, m in nn.Module.named_modules(module):
        facts = {"type": type(m).__name__[:200], "torch_class": torch_class(m)}
        if isinstance(m, nn.Linear):
            facts.update(in_features=int(m.in_features), out_features=int(m.out_features),
                         bias=m._parameters.get("bias") is not None)
        elif isinstance(m, nn.LayerNorm):
            facts.update(normalized_shape=[int(n) for n in m.normalized_shape],
                         eps=float(m.eps), elementwise_affine=bool(m.elementwise_affine))
        elif isinstance(m, nn.Embedding):
            facts.update(num_embeddings=int(m.num_embeddings),
                         embedding_dim=int(m.embedding_dim))
        elif isinstance(m, nn.modules.dropout._DropoutNd):
            facts.update(p=float(m.p))
        elif isinstance(m, nn.MultiheadAttention):
            facts.update(embed_dim=int(m.embed_dim), num_heads=int(m.num_heads))
        facts["training"] = bool(m.__dict__.get("training", False))
        out.append([str(name)[:500], facts])
    return out


def named_tensors(module, kind: str) -> list:
    """(name, tensor) of every parameter (``kind`` ``_parameters``) or buffer
    (``_buffers``) registered in ``module`` and its submodules (found by
    :func:`nn.Module.named_modules` of torch's base class), each tensor once: what the module
    holds, not what an override of ``parameters`` or ``named_modules`` says."""
    from torch import nn

    out, seen = [], set()
    for prefix, m in nn.Module.named_modules(module):
        for name, t in vars(m).get(kind, {}).items():
            if t is not None and id(t) not in seen:
                seen.add(id(t))
                out.append([f"{prefix}.{name}" if prefix else name, t])
    return out


def take_captured() -> list:
    """What the hooks saw since the last reply (then forgotten)."""
    seen = list(CAPTURED)
    CAPTURED.clear()
    return seen


def uncapture(number) -> None:
    """Remove the hook of capture ``number`` (nothing when there is none)."""
    hook = CAPTURES.pop(number, None)
    if hook is not None:
        hook.remove()


def command(op: str, obj, request: dict, decode_args: Callable[[], tuple],
            out: wire.Arrays) -> dict:
    """The reply to module command ``op`` on the learner's module ``obj`` (see
    :func:`autograder.kernel_client.serve`); ``decode_args()`` reads the request's
    arguments."""
    from torch import nn

    if not isinstance(obj, nn.Module):
        raise TypeError(f"{type(obj).__name__} is not a torch.nn.Module")
    if op == "parameters":
        found = named_tensors(obj, "_buffers" if request.get("buffers") else "_parameters")
        if request.get("values", True):
            items = [[name, t] for name, t in found]
        else:
            items = [[name, tensor_facts(t)[0], list(tensor_facts(t)[1])]
                     for name, t in found]
        return {"value": wire.encode(items, out)}
    if op == "state_dict":
        return {"value": wire.encode(dict(nn.Module.state_dict(obj)), out)}
    if op == "load":
        args = decode_args()
        if len(args) != 1 or type(args[0]) is not dict:
            raise TypeError("load_state_dict takes one dict of tensors")
        keys = nn.Module.load_state_dict(obj, args[0], strict=request.get("strict") is True)
        return {"value": wire.encode({"missing": list(keys.missing_keys),
                                      "unexpected": list(keys.unexpected_keys)}, out)}
    if op == "modules":
        return {"value": wire.encode(describe_modules(obj), out)}
    if op == "train":
        obj.train(request.get("mode") is True)
        return {"value": wire.encode(None, out)}
    if op == "capture":
        n = len(CAPTURES) + 1
        if request.get("when") == "post":
            def hook(module, args, kwargs, output):
                if len(CAPTURED) < MAX_CAPTURED:
                    CAPTURED.append([n, snapshot(args), snapshot(kwargs), snapshot(output)])
            CAPTURES[n] = obj.register_forward_hook(hook, with_kwargs=True)
        else:
            def hook(module, args, kwargs):
                if len(CAPTURED) < MAX_CAPTURED:
                    CAPTURED.append([n, snapshot(args), snapshot(kwargs)])
            CAPTURES[n] = obj.register_forward_pre_hook(hook, with_kwargs=True)
        return {"value": wire.encode(n, out)}
    return {"error": f"unknown request {op!r}"}
