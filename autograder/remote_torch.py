"""The torch side of the trusted checker's proxies (:mod:`autograder.remote`): the class
``isinstance`` sees for a learner's module, the tensor class for a tensor such a module
holds, and the autograd mode a call runs under. torch is never imported here at import
(the website's in-page checker has none): only when a module or tensor of the learner's
crosses, and then it is the checks' torch already loaded."""

from __future__ import annotations

import re
import sys

_STAND_INS: dict = {}


def loaded_torch():
    """torch, when something has imported it already; else None."""
    return sys.modules.get("torch")


def stand_in_class(kind: str, torch_class: str):
    """The class ``isinstance`` sees for a learner's module: the torch class the kernel
    named when the module is one of torch's own, else a subclass of it (``nn.Module`` when
    the kernel named none) with the learner's type name. Only classes already imported here
    count; nothing is imported by name."""
    from torch import nn

    mod, _, qualname = torch_class.rpartition(".")
    base = getattr(sys.modules.get(mod), qualname, None) if mod.startswith("torch.") else None
    if not (isinstance(base, type) and issubclass(base, nn.Module)):
        base = nn.Module
    if base.__name__ == kind:
        return base
    key = (kind, base)
    if key not in _STAND_INS:
        name = re.sub(r"\W", "", kind)[:80] or "Module"
        _STAND_INS[key] = type(name if not name[0].isdigit() else "_" + name, (base,),
                               {"__module__": "learner"})
    return _STAND_INS[key]


# In-place tensor methods a check may call on a tensor a learner's module holds: made in
# the kernel by command, and the checker's copy set to what the kernel then holds.
IN_PLACE = ("zero_", "copy_", "fill_", "add_", "sub_", "mul_", "div_", "clamp_",
            "normal_", "uniform_")
_REMOTE_TENSOR: list = []


def remote_tensor_class():
    """:class:`RemoteTensor`, made when a tensor first crosses as a handle (torch is
    imported only by checks that use it)."""
    if _REMOTE_TENSOR:
        return _REMOTE_TENSOR[0]
    import torch

    class RemoteTensor(torch.Tensor):
        """A tensor a learner's module holds (a parameter, a buffer): a plain copy of its
        data as it crossed, which torch functions see as a plain tensor; the in-place
        methods of :data:`IN_PLACE` act on the kernel's tensor by command, and the copy
        becomes what the kernel then holds."""

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **(kwargs or {}))

        def __repr__(self) -> str:
            with torch._C.DisableTorchFunctionSubclass():
                return "the learner's " + torch.Tensor.__repr__(self)

    def in_place(name):
        def method(self, *args, **kwargs):
            session, number = self._remote
            now = session.call(number, args, kwargs, method=name)[0]
            with torch._C.DisableTorchFunctionSubclass():
                if not isinstance(now, torch.Tensor) or torch.Tensor.size(now) != \
                        torch.Tensor.size(self):
                    raise TypeError(f"the learner's tensor after {name}() is not a tensor "
                                    "of its shape")
                torch.Tensor.copy_(self, now)
            return self
        method.__name__ = name
        return method

    for name in IN_PLACE:
        setattr(RemoteTensor, name, in_place(name))
    _REMOTE_TENSOR.append(RemoteTensor)
    return RemoteTensor


def torch_modes() -> dict:
    """The checker's torch mode that the learner's code runs under: autograd on or
    off (``with torch.no_grad():`` around a call reaches the kernel)."""
    torch = loaded_torch()
    return {} if torch is None else {"grad": bool(torch.is_grad_enabled())}
