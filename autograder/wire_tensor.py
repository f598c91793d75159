"""torch values across the grading boundary (:mod:`autograder.wire`): a tensor as a tagged
node (its data as an array, dtype, device, requires_grad, read through torch's base class),
read back as a plain tensor on the tagged device; dtypes and devices by name. torch is
imported only when a tensor, a dtype or a device is in a message."""

from __future__ import annotations

from typing import Any

from autograder.wire_folder import Arrays, WireError

# torch dtypes that cross, by name (torch.float32 -> "float32"): each has a NumPy dtype of
# the same name, except bfloat16 (float32 data).
TENSOR_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                 "float32", "float64", "complex64", "complex128")
MAX_CUDA_INDEX = 64




def torch_if_loaded():
    """torch, when something has imported it already; else None."""
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
        raise WireError("a device that is not a name")
    kind, _, index = name.partition(":")
    if kind == "cpu" and not index:
        return torch.device("cpu")
    if kind != "cuda" or (index and not (index.isdigit() and int(index) < MAX_CUDA_INDEX)):
        raise WireError("a tensor on a device that is neither cpu nor cuda")
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
        raise WireError("a tensor of a dtype that does not cross")
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


def torch_value(tree: dict):
    """A ``torch.dtype`` or ``torch.device`` by name."""
    import torch

    if set(tree) == {"t", "dtype"} and tree["dtype"] in TENSOR_DTYPES:
        return getattr(torch, tree["dtype"])
    if set(tree) == {"t", "device"}:
        return _device(tree["device"], torch)
    raise WireError("a malformed torch node")
