"""Plain data across the grading boundary (the learner's kernel and the trusted checker).

What crosses is JSON plus NumPy arrays in ``.npy`` files, nothing else: no pickle, no
code, no object of the sender's. :func:`encode` turns a value into a JSON-able tree whose
arrays are written as ``.npy`` files beside it; :func:`decode` reads such a tree back,
checking every node's tag, every length and depth, and every array's header, dtype and
size before it reads the data (``numpy.load``'s ``allow_pickle=False`` alone would still
trust the header's shape). A value that is not plain data crosses as its type's name only
(:class:`Opaque`), so the receiver can say "should be a list, got Foo" without ever holding
the sender's object.

A torch tensor crosses as a tagged node: its data as an array (float16 stays float16;
bfloat16, which NumPy lacks, as float32 data that must be exactly representable), its
dtype's name, its device (``cpu`` or ``cuda:N``) and whether it requires grad. The sender
reads dtype, shape, device and data through torch's own base class, never through a
subclass's properties; the receiver builds a plain tensor of the tagged dtype from the
checked array and puts it on the tagged device (:class:`WireError` when it has no such
device). ``torch.dtype`` and ``torch.device`` values cross by name. torch is imported only
when a tensor, a dtype or a device is actually in a message.

Both sides import this module: the kernel's client (:mod:`autograder.kernel_client`) to
send a learner's results, the checker (:mod:`autograder.checker`) to send inputs and to
read results. Nothing here is secret.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from autograder.wire_folder import ARRAY_KINDS, Arrays, Folder, WireError, as_folder
from autograder.wire_tensor import (decode_tensor, encode_tensor, torch_if_loaded, torch_value)

# Limits on what the checker reads from the kernel: far above any honest result of the
# exercises, far below the grader's RAM (the arrays' own: autograder.wire_folder).
MAX_JSON_BYTES = 16 * 2**20
MAX_DEPTH = 40
MAX_ITEMS = 1_000_000  # list, tuple and dict entries in one message
MAX_STR = 100_000
MAX_INT_DIGITS = 4000


class Opaque:
    """A value that did not cross: only its type's name did (``type(x).__name__`` reads
    as the sender's type, so a check's message names it)."""

    def __repr__(self) -> str:
        return f"<a {type(self).__name__} of the learner's>"


def opaque(type_name: str) -> Opaque:
    """An :class:`Opaque` whose class is named ``type_name`` (at most 80 characters)."""
    name = "".join(ch for ch in str(type_name)[:80] if ch.isidentifier() or ch.isalnum() or
                   ch in "._[]") or "object"
    return type(name, (Opaque,), {})()


def encode(value: Any, arrays: Arrays, depth: int = 0, handle=None) -> Any:
    """``value`` as a JSON-able tree (arrays into ``arrays``' files); what is not plain
    data becomes ``{"t": "opaque", "type": NAME}``, unless ``handle(value)`` (the kernel's
    client: its modules) returns a node for it. ``arrays`` None: a fingerprint (the data as
    text, no file)."""
    if depth > MAX_DEPTH:
        return {"t": "opaque", "type": "too-deeply-nested"}
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return {"t": "plain", "v": value}
    if kind is int:
        return {"t": "int", "v": str(value)} if abs(value) < 10 ** MAX_INT_DIGITS else \
            {"t": "opaque", "type": "int-too-large"}
    if kind is float:
        return {"t": "float", "v": repr(value)}
    if kind is complex:
        return {"t": "complex", "v": [repr(value.real), repr(value.imag)]}
    if kind in (list, tuple):
        return {"t": kind.__name__, "v": [encode(v, arrays, depth + 1, handle) for v in value]}
    if kind is dict and all(type(k) is str for k in value):
        return {"t": "dict", "v": {k: encode(v, arrays, depth + 1, handle)
                                   for k, v in value.items()}}
    torch = torch_if_loaded()
    if torch is not None:
        if isinstance(value, torch.Tensor):
            node = handle(value) if handle is not None else None
            if node is not None:
                return node
            if arrays is None:
                return encode_tensor(value, arrays)
            return arrays.once(value, lambda: encode_tensor(value, arrays))
        if kind is torch.Size:
            return {"t": "tuple", "v": [encode(int(v), arrays, depth + 1) for v in value]}
        if kind is torch.dtype:
            return {"t": "torch", "dtype": str(value).removeprefix("torch.")}
        if kind is torch.device:
            return {"t": "torch", "device": str(value)}
    if handle is not None:
        node = handle(value)
        if node is not None:
            return node
    np = numpy_if_loaded()
    if np is not None and isinstance(value, np.ndarray) and value.dtype.kind in ARRAY_KINDS:
        plain = value.view(np.ndarray)  # a subclass's properties (a lying dtype) are not read
        if arrays is None:  # a fingerprint (kernel_client): the data itself, as text
            return {"t": "ndarray", "v": [str(plain.dtype), plain.shape, plain.tobytes().hex()]}
        return arrays.once(value, lambda: {
            "t": "ndarray", "file": arrays.write(plain),
            "subclass": "" if kind is np.ndarray else kind.__name__})
    if np is not None and isinstance(value, np.generic) and value.dtype.kind in ARRAY_KINDS:
        if arrays is None:
            return {"t": "npscalar", "v": [str(value.dtype), repr(value)]}
        return {"t": "npscalar", "file": arrays.write(np.asarray(value))}
    return {"t": "opaque", "type": f"{getattr(kind, '__name__', 'object')}"}


def numpy_if_loaded():
    """NumPy, when something has imported it already; else None."""
    import sys

    return sys.modules.get("numpy")


_TAGS = {"plain", "int", "float", "complex", "list", "tuple", "dict", "ndarray", "npscalar",
         "opaque", "handle", "tensor", "torch"}


def decode(tree: Any, arrays: Arrays, *, handle=None, depth: int = 0, count: list | None = None,
           keep_grad: bool = False):
    """The value of a tree made by :func:`encode`, every node checked (:class:`WireError`).
    ``handle(tree)`` turns a ``{"t": "handle", ...}`` node into the receiver's proxy;
    ``keep_grad``: tensors tagged so require grad (the kernel's inputs; the checker reads
    data only)."""
    count = [0] if count is None else count
    count[0] += 1
    if depth > MAX_DEPTH or count[0] > MAX_ITEMS:
        raise WireError("a message nested or long past the limits")
    if type(tree) is not dict or tree.get("t") not in _TAGS:
        raise WireError(f"a node that is not plain data (a {type(tree).__name__})")
    t, v = tree["t"], tree.get("v")
    if t == "plain":
        if v is None or type(v) is bool or (type(v) is str and len(v) <= MAX_STR):
            return v
        raise WireError("a plain value that is not None, a bool or a short string")
    if t == "int" and type(v) is str and len(v) <= MAX_INT_DIGITS + 1:
        try:
            return int(v)
        except ValueError:
            pass
    if t == "float" and type(v) is str and len(v) <= 40:
        try:
            return float(v)
        except ValueError:
            pass
    if t == "complex" and type(v) is list and len(v) == 2 and all(
            type(x) is str and len(x) <= 40 for x in v):
        try:
            return complex(float(v[0]), float(v[1]))
        except ValueError:
            pass
    if t in ("list", "tuple") and type(v) is list:
        items = [decode(x, arrays, handle=handle, depth=depth + 1, count=count,
                        keep_grad=keep_grad) for x in v]
        return items if t == "list" else tuple(items)
    if t == "dict" and type(v) is dict:
        return {str(k)[:MAX_STR]: decode(x, arrays, handle=handle, depth=depth + 1, count=count,
                                         keep_grad=keep_grad)
                for k, x in v.items()}
    if t == "tensor":
        key = ("tensor", str(tree.get("file"))[:200], str(tree.get("dtype"))[:40],
               str(tree.get("device"))[:40], tree.get("requires_grad") is True, keep_grad)
        return arrays.read_once(key, lambda: decode_tensor(tree, arrays, keep_grad))
    if t == "torch":
        return torch_value(tree)
    if t == "ndarray":
        return arrays.read_once(("ndarray", str(tree.get("file"))[:200]),
                                lambda: arrays.read(tree.get("file")))
    if t == "npscalar":
        a = arrays.read(tree.get("file"))
        if a.shape != ():
            raise WireError("a NumPy scalar whose array is not 0-dimensional")
        return a[()]
    if t == "opaque":
        return opaque(tree.get("type") if type(tree.get("type")) is str else "object")
    if t == "handle" and handle is not None:
        return handle(tree)
    raise WireError(f"a malformed {t!r} node")


def dump(tree: Any, folder: Folder | Path | str, name: str) -> None:
    """Write a message's JSON tree as file ``name`` of ``folder`` (a new file)."""
    with as_folder(folder).create(name) as f:
        f.write(json.dumps(tree, allow_nan=False).encode("utf-8"))


def load(folder: Folder | Path | str, name: str) -> Any:
    """The JSON tree in file ``name`` of ``folder``, read only if it is a regular file
    within the limit."""
    try:
        f = as_folder(folder).open(name)
    except WireError as exc:
        if "No such file" in str(exc):
            raise WireError("no reply was written") from None
        raise
    with f:
        if os.fstat(f.fileno()).st_size > MAX_JSON_BYTES:
            raise WireError("the reply is larger than the limit")
        data = f.read(MAX_JSON_BYTES + 1)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise WireError(f"the reply is not JSON: {str(exc)[:100]}") from None
