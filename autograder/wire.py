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
import math
import os
import stat
from pathlib import Path
from typing import Any, Callable

# Limits on what the checker reads from the kernel: far above any honest result of the
# exercises (ex06's largest output is 4096 x 64 float64, 2 MiB), far below the grader's RAM.
MAX_JSON_BYTES = 16 * 2**20
MAX_ARRAY_BYTES = 64 * 2**20
MAX_TOTAL_ARRAY_BYTES = 256 * 2**20
MAX_DEPTH = 40
MAX_ITEMS = 1_000_000  # list, tuple and dict entries in one message
MAX_STR = 100_000
MAX_INT_DIGITS = 4000
ARRAY_KINDS = "biufc"  # bool, int, uint, float, complex: no object, string or void dtypes
# torch dtypes that cross, by name (torch.float32 -> "float32"): each has a NumPy dtype of
# the same name, except bfloat16 (float32 data).
TENSOR_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                 "float32", "float64", "complex64", "complex128")
MAX_CUDA_INDEX = 64


class WireError(ValueError):
    """A message that is not plain data within the limits (what is wrong, and where)."""


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


class Folder:
    """An exchange folder, held by a directory descriptor: every file is created, opened
    and removed relative to it, never through a path or a link. Whoever else can write
    the folder (the learner's kernel) cannot make a write land anywhere else, replace the
    folder by a link, or have a file read through a link."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    @staticmethod
    def _plain(name: str) -> str:
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            raise WireError(f"a file name that is not plain: {str(name)[:80]!r}")
        return name

    def create(self, name: str):
        """A new file ``name`` for writing (it must not exist, not even as a link)."""
        fd = os.open(self._plain(name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                     0o644, dir_fd=self.fd)
        return os.fdopen(fd, "wb")

    def open(self, name: str):
        """File ``name`` for reading: a regular file, not through a link (WireError)."""
        try:
            fd = os.open(self._plain(name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK,
                         dir_fd=self.fd)
        except OSError as exc:  # missing, or a link (not followed)
            raise WireError(f"{name} cannot be opened: {exc.strerror}") from None
        f = os.fdopen(fd, "rb")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            f.close()
            raise WireError(f"{name} is not a regular file")
        return f

    def clear(self) -> None:
        """Remove every entry (links themselves, not what they point to)."""
        for name in os.listdir(self.fd):
            try:
                os.unlink(name, dir_fd=self.fd)
            except OSError:  # a folder someone made here: left, never followed
                pass


def socket_path(folder_fd: int, folder: str, name: str) -> str:
    """The path of socket ``name`` in the exchange folder: through the folder's descriptor
    where ``/proc`` has it (short, and no link laid in its place is followed)."""
    via_fd = f"/proc/self/fd/{folder_fd}/{name}"
    return via_fd if os.path.isdir(f"/proc/self/fd/{folder_fd}") else os.path.join(folder, name)


def _folder(folder) -> Folder:
    return folder if isinstance(folder, Folder) else Folder(folder)


class Arrays:
    """The ``.npy`` files of one message, in ``folder``, named ``{prefix}-{n}.npy``."""

    def __init__(self, folder: Folder | Path | str, prefix: str):
        self.folder, self.prefix, self.count, self.total = _folder(folder), prefix, 0, 0
        # One object in a message crosses once and comes back as one object: the same
        # tensor given as query, key and value is one tensor on the other side (``key is
        # query`` holds there as here). id -> (object, node) written; key -> value read.
        self.written: dict[int, tuple[Any, dict]] = {}
        self.decoded: dict[tuple, Any] = {}

    def once(self, value, make: Callable[[], dict]) -> dict:
        """The node of ``value`` made by ``make()``, or the one already made for it."""
        hit = self.written.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        node = make()
        self.written[id(value)] = (value, node)
        return node

    def read_once(self, key: tuple, make: Callable[[], Any]):
        """What ``make()`` decodes for ``key`` (a file and how it is read), once per
        message."""
        if key not in self.decoded:
            self.decoded[key] = make()
        return self.decoded[key]

    def write(self, array) -> str:
        import numpy as np

        name = f"{self.prefix}-{self.count}.npy"
        self.count += 1
        with self.folder.create(name) as f:
            plain = np.asarray(array)
            if not plain.flags.c_contiguous:
                plain = plain.copy(order="C")
            np.lib.format.write_array(f, plain, allow_pickle=False)
        return name

    def read(self, name: Any):
        """The array in file ``name`` of this message, checked before its data is read."""
        import numpy as np

        if not isinstance(name, str) or name != os.path.basename(name) or not (
                name.startswith(self.prefix + "-") and name.endswith(".npy")):
            raise WireError(f"an array file name that is not this message's: {str(name)[:80]!r}")
        with self.folder.open(name) as f:
            info = os.fstat(f.fileno())
            if info.st_size > MAX_ARRAY_BYTES + 4096:
                raise WireError(f"{name} holds {info.st_size} bytes, more than the "
                                f"{MAX_ARRAY_BYTES} an array may")
            try:
                version = np.lib.format.read_magic(f)
                read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                               (2, 0): np.lib.format.read_array_header_2_0}.get(version)
                if read_header is None:
                    raise ValueError(f"version {version}")
                shape, fortran, dtype = read_header(f, max_header_size=10000)
            except (ValueError, SyntaxError, TypeError) as exc:
                raise WireError(f"{name} has no valid .npy header: {exc}") from None
            if dtype.kind not in ARRAY_KINDS or dtype.hasobject or dtype.fields:
                raise WireError(f"{name} has dtype {dtype}, which is not plain numbers")
            nbytes = math.prod(shape) * dtype.itemsize
            if nbytes > MAX_ARRAY_BYTES or self.total + nbytes > MAX_TOTAL_ARRAY_BYTES:
                raise WireError(f"{name}: an array of shape {shape} is larger than allowed")
            self.total += nbytes
            data = f.read(nbytes + 1)
            if len(data) != nbytes:
                raise WireError(f"{name}: {len(data)} bytes of data for shape {shape} of "
                                f"{dtype} ({nbytes} expected)")
        array = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
        return array.copy()


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
    torch = _torch_if_loaded()
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
    np = _numpy_if_loaded()
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


def _numpy_if_loaded():
    import sys

    return sys.modules.get("numpy")


def _torch_if_loaded():
    import sys

    return sys.modules.get("torch")


def tensor_facts(value) -> tuple[str, tuple, str, bool]:
    """(dtype name, shape, device, requires_grad) of a tensor, read through torch's base
    class: a subclass's ``dtype``, ``shape`` or ``device`` properties are not consulted."""
    import torch

    base = torch._C.TensorBase
    return (str(base.dtype.__get__(value)).removeprefix("torch."),
            tuple(int(n) for n in base.shape.__get__(value)), str(base.device.__get__(value)),
            bool(base.requires_grad.__get__(value)))


def encode_tensor(value, arrays: Arrays | None) -> dict:
    """The tagged node of tensor ``value`` (see the module's docstring); a tensor that is
    not plain strided data of a dtype in :data:`TENSOR_DTYPES` on the CPU or a CUDA device
    (sparse, quantized, meta, float8) crosses as an opaque name that says so."""
    import torch

    try:
        dtype, shape, device, requires_grad = tensor_facts(value)
        layout = torch._C.TensorBase.layout.__get__(value)
        if dtype not in TENSOR_DTYPES or layout is not torch.strided or not (
                device == "cpu" or device.startswith("cuda")):
            return {"t": "opaque", "type": f"Tensor[{dtype}, {device}, {layout}]"[:80]}
        with torch._C.DisableTorchFunctionSubclass():
            plain = torch.Tensor.detach(value).to("cpu")
            if dtype == "bfloat16":
                plain = plain.to(torch.float32)
            data = plain.resolve_conj().resolve_neg().contiguous().numpy()
    except Exception:  # noqa: BLE001 - a tensor of the learner's that cannot be read
        return {"t": "opaque", "type": "unreadable-Tensor"}
    if tuple(data.shape) != shape:
        return {"t": "opaque", "type": "unreadable-Tensor"}
    node = {"t": "tensor", "dtype": dtype, "device": device, "requires_grad": requires_grad}
    if arrays is None:  # a fingerprint: the data itself, as text
        node["v"] = [str(data.dtype), list(data.shape), data.tobytes().hex()]
        return node
    node["file"] = arrays.write(data)
    return node


def _device(name: Any, torch) -> Any:
    """The torch.device of a tag (``cpu``, ``cuda``, ``cuda:N``) this process has."""
    if type(name) is not str or len(name) > 20:
        raise WireError(f"a device that is not a name: {str(name)[:40]!r}")
    kind, _, index = name.partition(":")
    if kind == "cpu" and not index:
        return torch.device("cpu")
    if kind != "cuda" or (index and not (index.isdigit() and int(index) < MAX_CUDA_INDEX)):
        raise WireError(f"a tensor on device {name!r}, which is neither cpu nor cuda")
    n = int(index or 0)
    if not torch.cuda.is_available() or n >= torch.cuda.device_count():
        raise WireError(f"a tensor on device {name!r}, which this process does not have "
                        f"(it has {torch.cuda.device_count() if torch.cuda.is_available() else 0} "
                        "CUDA devices)")
    return torch.device("cuda", n)


def decode_tensor(tree: dict, arrays: Arrays, keep_grad: bool = False):
    """The plain tensor of a tagged node: the array checked (:meth:`Arrays.read`), its dtype
    the tag's (bfloat16: float32 data exactly representable), on the tagged device; with
    ``keep_grad``, requiring grad when the tag says so (a floating tensor only)."""
    import torch

    dtype = tree.get("dtype")
    if dtype not in TENSOR_DTYPES:
        raise WireError(f"a tensor of dtype {str(dtype)[:40]!r}, which does not cross")
    device = _device(tree.get("device"), torch)
    requires_grad = tree.get("requires_grad", False)
    if type(requires_grad) is not bool:
        raise WireError("a tensor whose requires_grad is not a bool")
    data = arrays.read(tree.get("file"))
    carried = "float32" if dtype == "bfloat16" else dtype
    if str(data.dtype) != carried or data.dtype.byteorder not in "=|":
        raise WireError(f"a {dtype} tensor whose array is {data.dtype}")
    out = torch.from_numpy(data)
    if dtype == "bfloat16":
        exact = out.to(torch.bfloat16)
        back = exact.to(torch.float32)
        if not bool(((back == out) | (torch.isnan(back) & torch.isnan(out))).all()):
            raise WireError("a bfloat16 tensor whose float32 data bfloat16 cannot hold")
        out = exact
    out = out.to(device)
    if keep_grad and requires_grad:
        if not (out.is_floating_point() or out.is_complex()):
            raise WireError(f"a {dtype} tensor that requires grad")
        out.requires_grad_(True)
    return out


def _torch_value(tree: dict):
    """A ``torch.dtype`` or ``torch.device`` by name."""
    import torch

    if set(tree) == {"t", "dtype"} and tree["dtype"] in TENSOR_DTYPES:
        return getattr(torch, tree["dtype"])
    if set(tree) == {"t", "device"}:
        return _device(tree["device"], torch)
    raise WireError(f"a malformed torch node: {str(tree)[:80]!r}")


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
        raise WireError(f"a node that is not plain data: {str(tree)[:80]!r}")
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
        return _torch_value(tree)
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
    with _folder(folder).create(name) as f:
        f.write(json.dumps(tree, allow_nan=False).encode("utf-8"))


def load(folder: Folder | Path | str, name: str) -> Any:
    """The JSON tree in file ``name`` of ``folder``, read only if it is a regular file
    within the limit."""
    try:
        f = _folder(folder).open(name)
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
