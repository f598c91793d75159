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

from autograder import kernel_modules, wire
from autograder.kernel_modules import loaded_torch, torch_class
from autograder.wire_folder import ARRAY_KINDS, socket_path
from autograder.wire_tensor import encode_tensor

# The learner's objects the checker refers to by number (functions, classes, modules, the
# tensors a module holds). An object keeps its number (HANDLES keeps it alive).
HANDLES: dict[int, object] = {}
_NUMBERS: dict[int, int] = {}
# The exceptions the checker can tell apart (a learner's exception counts as the first of
# these it is an instance of).
KINDS = ("NotImplementedError", "ValueError", "TypeError", "IndexError", "KeyError",
         "ZeroDivisionError", "OverflowError", "FloatingPointError", "ArithmeticError",
         "MemoryError", "RecursionError", "AssertionError", "AttributeError", "NameError",
         "ImportError", "RuntimeError", "KeyboardInterrupt", "SystemExit", "Exception")


def _kind(obj) -> str:
    torch = loaded_torch()
    if torch is not None and isinstance(obj, torch.nn.Module):
        return "module"
    if torch is not None and isinstance(obj, torch.Tensor):
        return "tensor"
    return "class" if isinstance(obj, type) else "function"


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
    torch = loaded_torch()
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
    torch = loaded_torch()
    if torch is not None and isinstance(value, torch.Tensor):
        node = encode_tensor(value, None)
        return hashlib.sha1(json.dumps(node, sort_keys=True).encode()).hexdigest()
    return None


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
        kernel_modules.uncapture(request.get("capture"))
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
    return kernel_modules.command(op, obj, request, lambda: _decode_args(
        request, wire.Arrays(folder_path, f"{rid}.in"))[0], out)


def _context(request: dict):
    """The checker's autograd mode (``grad``) and seed (``seed``) for the learner's code."""
    import contextlib

    stack = contextlib.ExitStack()
    torch = loaded_torch()
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
    ``modules`` (:func:`autograder.kernel_modules.describe_modules`), ``train``
    (``module.train(mode)``),
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
    seen = kernel_modules.take_captured()
    if seen:
        try:
            reply["captured"] = wire.encode(seen, out)
        except BaseException as exc:  # noqa: BLE001 - what the hooks saw cannot be sent
            reply = _raised(exc)
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


def serve_tests(namespace: dict, folder: str, names: tuple[str, ...]) -> None:
    """Consecutive test cells in one kernel cell: serve the checker, which runs each whole
    test itself (visible and hidden parts) and decides, on its socket in ``folder``, one
    name of ``names`` per test, in order (:func:`_serve_line`); the next test's only after
    the checker said ``done`` to this one's. One kernel cell per run of test cells, however
    many calls they make; the learner's code runs only when the checker calls it, and its
    output is the cell's display except inside the hidden parts (see :func:`_mark`)."""
    for name in names:
        if not _serve_line(namespace, folder, str(name)):
            break


def _serve_line(namespace: dict, folder: str, name: str) -> bool:
    """Serve one test: connect to the checker's socket ``name`` in ``folder``, answer each
    request id it sends (:func:`serve`) and send the id back, until it says ``done`` (True:
    the next test may follow), says anything else, hangs up or a call was interrupted
    (False: the cell ends)."""
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
                return line == b"done\n"
            if line == b"end\n":
                return False
            rid = line.decode("ascii", "replace").strip()
            interrupted = serve(namespace, folder, rid)
            sock.sendall(rid.encode("ascii") + b"\n")
            if interrupted:
                return False
    finally:
        sock.close()
        os.close(fd)
