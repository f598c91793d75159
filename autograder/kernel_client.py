"""The thin client in the learner's kernel: it runs what the trusted checker asks, nothing more.

The checker (:mod:`autograder.checker`, in the grader's process) writes a request into the
exchange folder and has the kernel run ``serve(globals(), FOLDER, ID)``; this module reads
the request, looks a name up in the learner's namespace (``resolve``), calls one of the
learner's functions, classes or modules with the inputs it was sent (``call``), or runs one
of the few public commands on a learner's torch module (build, load given parameters, read
them back, list submodules, train/eval, watch a submodule's input: see :func:`serve`), and
writes what came back (or what was raised) as plain data (:mod:`autograder.wire`). It
judges nothing and holds nothing hidden: the inputs are the checker's, the expected values
never leave the checker. Whatever this module replies is, to the checker, what the
learner's code did: a learner who changes it changes only their own answers, and a reply
that is not plain data fails the check.
"""

from __future__ import annotations

import json
from autograder import wire
from autograder.wire_folder import ARRAY_KINDS, socket_path
from autograder.wire_tensor import encode_tensor, tensor_facts

# The learner's objects the checker refers to by number (functions, classes, modules, the
# tensors a module holds). An object keeps its number (HANDLES keeps it alive).
HANDLES: dict[int, object] = {}
_NUMBERS: dict[int, int] = {}
# Forward hooks the checker asked for (capture number -> torch's removable handle), and the
# inputs (and outputs) they saw since the last reply, copied when they were seen.
CAPTURES: dict[int, object] = {}
CAPTURED: list = []
MAX_CAPTURED = 64  # per reply: a hook left on during a long loop keeps the first ones only
# The exceptions the checker can tell apart (a learner's exception counts as the first of
# these it is an instance of).
KINDS = ("NotImplementedError", "ValueError", "TypeError", "IndexError", "KeyError",
         "ZeroDivisionError", "OverflowError", "FloatingPointError", "ArithmeticError",
         "MemoryError", "RecursionError", "AssertionError", "AttributeError", "NameError",
         "ImportError", "RuntimeError", "KeyboardInterrupt", "SystemExit", "Exception")


def _torch():
    import sys

    return sys.modules.get("torch")


def _kind(obj) -> str:
    torch = _torch()
    if torch is not None and isinstance(obj, torch.nn.Module):
        return "module"
    if torch is not None and isinstance(obj, torch.Tensor):
        return "tensor"
    return "class" if isinstance(obj, type) else "function"


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


def _number(obj) -> int:
    n = _NUMBERS.get(id(obj))
    if n is None or HANDLES.get(n) is not obj:
        n = len(HANDLES) + 1
        HANDLES[n] = obj
        _NUMBERS[id(obj)] = n
    return n


def _handle(obj, arrays: wire.Arrays | None = None) -> dict:
    """The node that names ``obj`` for the checker: its number, its type's name and kind;
    a module's torch class (:func:`torch_class`), a tensor's data (so the checker can read
    what it holds, and change it only by command)."""
    kind = _kind(obj)
    try:
        name = str(getattr(obj, "__name__", "") if kind in ("class", "function") else "")[:200]
    except Exception:  # noqa: BLE001 - a learner's __getattr__ may raise anything
        name = ""
    node = {"t": "handle", "id": _number(obj), "name": name,
            "type": type(obj).__name__[:200], "kind": kind}
    if kind == "module":
        node["torch_class"] = torch_class(obj)
    if kind == "tensor":
        node["data"] = encode_tensor(obj, arrays)
    return node


def _modules_as_handles(arrays: wire.Arrays):
    """The encoder's hook for results: a module crosses as a handle, a tensor as data."""
    torch = _torch()
    if torch is None:
        return None

    def hook(value):
        return _handle(value, arrays) if isinstance(value, torch.nn.Module) else None
    return hook


def _raised(exc: BaseException) -> dict:
    import builtins

    kinds = [k for k in KINDS if isinstance(exc, getattr(builtins, k))]
    try:
        message = str(exc)[:4000]
    except Exception:  # noqa: BLE001 - a learner's __str__ may raise
        message = "(its message could not be read)"
    return {"raised": {"type": type(exc).__name__[:200], "kinds": kinds, "message": message}}


def _decode_args(request: dict, arrays: wire.Arrays):
    def handle(node):
        return HANDLES[node["id"]]

    args = wire.decode(request["args"], arrays, handle=handle, keep_grad=True)
    kwargs = wire.decode(request["kwargs"], arrays, handle=handle, keep_grad=True)
    return args, kwargs


def _fingerprint(value):
    """What tells whether the call changed an argument (lists, arrays and tensors), without
    a copy of an array's data."""
    import hashlib

    if type(value) is list:
        return json.dumps(wire.encode(value, None), sort_keys=True)
    np = wire.numpy_if_loaded()
    if np is not None and isinstance(value, np.ndarray) and value.dtype.kind in ARRAY_KINDS:
        data = value.view(np.ndarray)
        raw = data.data if data.flags.c_contiguous else data.tobytes()
        return (data.shape, str(data.dtype), hashlib.sha1(raw).hexdigest())
    torch = _torch()
    if torch is not None and isinstance(value, torch.Tensor):
        node = encode_tensor(value, None)
        return hashlib.sha1(json.dumps(node, sort_keys=True).encode()).hexdigest()
    return None


def _snapshot(value, depth: int = 0):
    """``value`` with every tensor in it copied (a captured input the model may change in
    place afterwards)."""
    torch = _torch()
    if depth > wire.MAX_DEPTH:
        return value
    if torch is not None and isinstance(value, torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():
            return torch.Tensor.detach(value).clone()
    if type(value) in (list, tuple):
        return type(value)(_snapshot(v, depth + 1) for v in value)
    if type(value) is dict:
        return {k: _snapshot(v, depth + 1) for k, v in value.items()}
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


def _named_tensors(module, kind: str) -> list:
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


def _name(value) -> str:
    if type(value) is not str or not (value.isidentifier() or value in (
            "__call__", "__getitem__", "__len__")):
        raise ValueError(f"not a method or attribute name: {str(value)[:80]!r}")
    return value


def _run(request: dict, namespace: dict, folder_path: wire.Folder, rid: str,
         out: wire.Arrays) -> dict:
    """The reply to one request (the learner's code may raise: the caller reports it)."""
    op = request["op"]
    if op == "resolve":
        name = request["name"]
        if name not in namespace:
            return {"missing": True}
        value = namespace[name]
        return {"value": _handle(value, out) if callable(value) else wire.encode(value, out)}
    if op == "uncapture":
        hook = CAPTURES.pop(request.get("capture"), None)
        if hook is not None:
            hook.remove()
        return {"value": wire.encode(None, out)}
    if op == "show":  # what the test cell's visible code printed (the checker ran it)
        import sys

        sys.stdout.write(str(request.get("text"))[:MAX_SHOWN])
        return {"value": wire.encode(None, out)}
    if op == "phase":  # the checker's run enters or leaves a hidden part of the test
        _mark("hidden" if request.get("hidden") is True else "visible",
              str(request.get("token"))[:64])
        return {"value": wire.encode(None, out)}
    obj = HANDLES[request["handle"]]
    if op == "call":
        args, kwargs = _decode_args(request, wire.Arrays(folder_path, f"{rid}.in"))
        fn = obj if request.get("method") is None else getattr(obj, _name(request["method"]))
        before = [_fingerprint(a) for a in args]
        result = fn(*args, **kwargs)
        return {"value": wire.encode(result, out, handle=_modules_as_handles(out)),
                "changed": [i for i, a in enumerate(args)
                            if before[i] is not None and _fingerprint(a) != before[i]]}
    if op == "attr":
        value = getattr(obj, _name(request["name"]))
        node = _handle(value, out) if _kind(value) in ("module", "tensor") or (
            callable(value) and not isinstance(value, type)) else None
        return {"value": node or wire.encode(value, out, handle=_modules_as_handles(out))}
    from torch import nn

    if not isinstance(obj, nn.Module):
        raise TypeError(f"{type(obj).__name__} is not a torch.nn.Module")
    if op == "parameters":
        found = _named_tensors(obj, "_buffers" if request.get("buffers") else "_parameters")
        if request.get("values", True):
            items = [[name, t] for name, t in found]
        else:
            items = [[name, tensor_facts(t)[0], list(tensor_facts(t)[1])]
                     for name, t in found]
        return {"value": wire.encode(items, out)}
    if op == "state_dict":
        return {"value": wire.encode(dict(nn.Module.state_dict(obj)), out)}
    if op == "load":
        args, _ = _decode_args(request, wire.Arrays(folder_path, f"{rid}.in"))
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
                    CAPTURED.append([n, _snapshot(args), _snapshot(kwargs), _snapshot(output)])
            CAPTURES[n] = obj.register_forward_hook(hook, with_kwargs=True)
        else:
            def hook(module, args, kwargs):
                if len(CAPTURED) < MAX_CAPTURED:
                    CAPTURED.append([n, _snapshot(args), _snapshot(kwargs)])
            CAPTURES[n] = obj.register_forward_pre_hook(hook, with_kwargs=True)
        return {"value": wire.encode(n, out)}
    return {"error": f"unknown request {op!r}"}


def _context(request: dict):
    """The checker's autograd mode (``grad``) and seed (``seed``) for the learner's code."""
    import contextlib

    stack = contextlib.ExitStack()
    torch = _torch()
    if torch is not None and type(request.get("grad")) is bool:
        stack.enter_context(torch.set_grad_enabled(request["grad"]))
    if torch is not None and type(request.get("seed")) is int:
        torch.manual_seed(request["seed"])
    return stack


def serve(namespace: dict, folder: str, rid: str) -> bool:
    """Answer request ``rid`` in ``folder`` with the learner's ``namespace``; True when
    the learner's call was interrupted (the cell's time limit: stop serving).

    Requests (``op``): ``resolve`` a name; ``call`` a handle, or its ``method``, with
    arguments; read an attribute (``attr``) of a handle: a module or tensor crosses as a
    handle (a tensor with its data), a method as a callable handle, anything else as data;
    and for a module (the base ``nn.Module`` methods, not the learner's overrides):
    ``parameters`` (or buffers; with values or only dtypes and shapes), ``state_dict``,
    ``load`` (``load_state_dict`` of the tensors sent: the missing and unexpected keys),
    ``modules`` (:func:`describe_modules`), ``train`` (``module.train(mode)``),
    ``capture`` (a forward pre-hook, or a forward hook with ``when: post``, whose inputs
    come back with every later reply as ``captured``) and ``uncapture``. ``grad`` and
    ``seed`` set torch's autograd mode and seed for the request (:func:`_context`)."""
    folder_path = wire.Folder(folder)
    with folder_path.open(f"{rid}.request.json") as f:
        request = json.loads(f.read().decode("utf-8"))
    out = wire.Arrays(folder_path, f"{rid}.out")
    reply: dict
    try:
        with _context(request):
            reply = _run(request, namespace, folder_path, rid, out)
    except BaseException as exc:  # noqa: BLE001 - the learner's code may raise anything
        reply = _raised(exc)
        interrupted = isinstance(exc, KeyboardInterrupt)
    else:
        interrupted = False
    if CAPTURED:
        try:
            reply["captured"] = wire.encode(list(CAPTURED), out)
        except BaseException as exc:  # noqa: BLE001 - what the hooks saw cannot be sent
            reply = _raised(exc)
        CAPTURED.clear()
    reply["id"] = rid
    try:
        wire.dump(reply, folder_path, f"{rid}.reply.json")
    finally:
        folder_path.close()
    return interrupted


# The metadata of the display output that ends a test cell's display: what the kernel
# shows after it (a learner's prints during the checker's calls) is not shown.
SERVING = "autograder-serving"
MAX_SHOWN = 100_000  # characters of one print of a test cell's visible code


def _mark(phase: str, token: str) -> None:
    """A marker in the cell's outputs: the learner's output from here on is shown
    (``visible``) or dropped (``hidden``: calls with the hidden tests' inputs). ``token``
    is the checker's, fresh for each marker: a marker it did not ask for, or one missing,
    and the grader shows none of the cell's output."""
    import sys

    try:
        from IPython.display import publish_display_data

        sys.stdout.flush()
        publish_display_data({"text/plain": ""},
                             metadata={SERVING: {"phase": phase, "token": token}})
    except Exception:  # noqa: BLE001 - not in IPython (tests): nothing to mark
        pass


def serve_test(namespace: dict, folder: str, name: str) -> None:
    """One test cell in the kernel: serve the checker, which runs the whole test itself
    (visible and hidden parts) and decides: connect to its socket ``name`` in ``folder``,
    answer each request id it sends (:func:`serve`) and send the id back, until it says
    ``done`` or hangs up. One kernel cell per test, however many calls the test makes; the
    learner's code runs only when the checker calls it, and its output is the cell's
    display except inside the hidden parts (see :func:`_mark`)."""
    import os
    import socket

    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(socket_path(fd, folder, name))
        lines = sock.makefile("rb")
        while True:
            line = lines.readline(200)
            if not line or line == b"done\n":
                break
            rid = line.decode("ascii", "replace").strip()
            interrupted = serve(namespace, folder, rid)
            sock.sendall(rid.encode("ascii") + b"\n")
            if interrupted:
                break
    finally:
        sock.close()
        os.close(fd)
