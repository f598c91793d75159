"""The thin client in the learner's kernel: it runs what the trusted checker asks, nothing more.

The checker (:mod:`autograder.checker`, in the grader's process) writes a request into the
exchange folder and has the kernel run ``serve(globals(), FOLDER, ID)``; this module reads
the request, looks a name up in the learner's namespace (``resolve``) or calls one of the
learner's functions with the inputs it was sent (``call``), and writes what came back (or what was raised) as
plain data (:mod:`autograder.wire`). It judges nothing and holds nothing hidden: the
inputs are the checker's, the expected values never leave the checker. Whatever this
module replies is, to the checker, what the learner's code did: a learner who changes it
changes only their own answers, and a reply that is not plain data fails the check.
"""

from __future__ import annotations

import json
from autograder import wire

# The learner's objects the checker refers to by number (functions, classes).
HANDLES: dict[int, object] = {}
# The exceptions the checker can tell apart (a learner's exception counts as the first of
# these it is an instance of).
KINDS = ("NotImplementedError", "ValueError", "TypeError", "IndexError", "KeyError",
         "ZeroDivisionError", "OverflowError", "FloatingPointError", "ArithmeticError",
         "MemoryError", "RecursionError", "AssertionError", "AttributeError", "NameError",
         "ImportError", "RuntimeError", "KeyboardInterrupt", "SystemExit", "Exception")


def _handle(obj) -> dict:
    n = len(HANDLES) + 1
    HANDLES[n] = obj
    return {"t": "handle", "id": n, "name": str(getattr(obj, "__name__", ""))[:200],
            "type": type(obj).__name__[:200]}


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

    args = wire.decode(request["args"], arrays, handle=handle)
    kwargs = wire.decode(request["kwargs"], arrays, handle=handle)
    return args, kwargs


def _fingerprint(value):
    """What tells whether the call changed an argument (lists and arrays), without a copy
    of an array's data."""
    import hashlib

    if type(value) is list:
        return json.dumps(wire.encode(value, None), sort_keys=True)
    np = wire._numpy_if_loaded()
    if np is not None and isinstance(value, np.ndarray) and value.dtype.kind in wire.ARRAY_KINDS:
        data = value.view(np.ndarray)
        raw = data.data if data.flags.c_contiguous else data.tobytes()
        return (data.shape, str(data.dtype), hashlib.sha1(raw).hexdigest())
    return None


def serve(namespace: dict, folder: str, rid: str) -> bool:
    """Answer request ``rid`` in ``folder`` with the learner's ``namespace``; True when
    the learner's call was interrupted (the cell's time limit: stop serving)."""
    folder_path = wire.Folder(folder)
    with folder_path.open(f"{rid}.request.json") as f:
        request = json.loads(f.read().decode("utf-8"))
    out = wire.Arrays(folder_path, f"{rid}.out")
    reply: dict
    try:
        if request["op"] == "resolve":
            name = request["name"]
            if name not in namespace:
                reply = {"missing": True}
            else:
                value = namespace[name]
                reply = {"value": _handle(value) if callable(value) else
                         wire.encode(value, out)}
        elif request["op"] == "call":
            args, kwargs = _decode_args(request, wire.Arrays(folder_path, f"{rid}.in"))
            fn = HANDLES[request["handle"]]
            before = [_fingerprint(a) for a in args]
            result = fn(*args, **kwargs)
            reply = {"value": wire.encode(result, out),
                     "changed": [i for i, a in enumerate(args)
                                 if before[i] is not None and _fingerprint(a) != before[i]]}
        else:
            reply = {"error": f"unknown request {request['op']!r}"}
    except BaseException as exc:  # noqa: BLE001 - the learner's code may raise anything
        reply = _raised(exc)
        interrupted = isinstance(exc, KeyboardInterrupt)
    else:
        interrupted = False
    reply["id"] = rid
    try:
        wire.dump(reply, folder_path, f"{rid}.reply.json")
    finally:
        folder_path.close()
    return interrupted


def socket_path(folder_fd: int, folder: str, name: str) -> str:
    """The path of socket ``name`` in the exchange folder: through the folder's descriptor
    where ``/proc`` has it (short, and no link laid in its place is followed)."""
    import os

    via_fd = f"/proc/self/fd/{folder_fd}/{name}"
    return via_fd if os.path.isdir(f"/proc/self/fd/{folder_fd}") else os.path.join(folder, name)


# The metadata of the display output that ends a test cell's display: what the kernel
# shows after it (a learner's prints during the checker's calls) is not shown.
SERVING = "autograder-serving"


def serve_test(namespace: dict, folder: str, name: str, visible: str = "") -> None:
    """One test cell in the kernel: run its ``visible`` part (display only: the
    checker runs the whole test itself and decides), then serve the checker through the
    test: connect to its socket ``name`` in ``folder``, answer each request id it sends
    (:func:`serve`) and send the id back, until it says ``done`` or hangs up. One kernel
    cell per test, however many calls the test makes."""
    import os
    import socket
    import sys

    try:
        if visible:
            exec(compile(visible, "<test cell>", "exec"), namespace)
    except BaseException:  # noqa: BLE001 - the checker's verdict is the cell's error
        pass
    try:
        from IPython.display import publish_display_data

        sys.stdout.flush()
        publish_display_data({"text/plain": ""}, metadata={SERVING: name})
    except Exception:  # noqa: BLE001 - not in IPython (tests): nothing to mark
        pass

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
