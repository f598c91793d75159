"""The learner's names as the trusted checker sees them: proxies that call the learner's
code in its kernel through a :class:`~autograder.session.Session` (stdlib only at import:
the website's in-page checker imports it too; torch only when a module or tensor crosses).

:class:`Remote` is a learner's function or class, :class:`RemoteModule` an instance of a
torch module of the learner's, driven by command, and ``RemoteTensor``
(:func:`autograder.remote_torch.remote_tensor_class`) a tensor such a module holds. Only plain data goes in and
comes out (:mod:`autograder.wire`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autograder import wire
from autograder.remote_torch import loaded_torch, remote_tensor_class, stand_in_class
from autograder.session_errors import ProtocolError
from autograder.wire_tensor import decode_tensor

if TYPE_CHECKING:
    from autograder.session import Session


class Remote:
    """A function or class of the learner's, called in the kernel through :class:`Session`.

    Only plain data goes in and comes out; ``__name__`` is the function's own name,
    ``bound_as`` the name of the learner's namespace it was found under, ``kind`` its
    type's name (as the kernel reported it)."""

    def __init__(self, session: Session, node: dict):
        self._session, self._id = session, node.get("id")
        self.__name__ = str(node.get("name") or "")[:200]
        self.kind = str(node.get("type") or "")[:200]
        self.bound_as = ""  # the learner's name that held it, when the test looked it up
        self.changed_inputs: list[int] = []  # arguments its last call changed
        if type(self._id) is not int:
            raise ProtocolError("a handle without a number")

    def __call__(self, *args, **kwargs):
        self.changed_inputs = []
        result, self.changed_inputs = self._session.call(self._id, args, kwargs)
        return result

    def call(self, args: tuple = (), kwargs: dict | None = None, *, seed: int | None = None):
        """``self(*args, **kwargs)``, with ``torch.manual_seed(seed)`` run in the kernel
        first when ``seed`` is given (a module built from a known random state)."""
        self.changed_inputs = []
        result, self.changed_inputs = self._session.call(self._id, args, kwargs or {},
                                                         seed=seed)
        return result

    def __repr__(self) -> str:
        return f"<the learner's {self.kind} {self.__name__}>"


class RemoteModule(Remote):
    """A torch module of the learner's (an instance in the kernel), driven by command.

    It answers what tests ask of an ``nn.Module`` with plain data from the kernel:
    calling it (``module(x)``: torch's ``__call__``, hooks and ``forward``), ``forward``,
    ``train``/``eval``, ``to``/``float``/``double``, attributes (a submodule or a held tensor
    comes back as a proxy, a number as data), ``parameters``/``named_parameters``/
    ``buffers``/``state_dict`` (copies of the tensors), ``load_state_dict`` (the checker's
    tensors loaded by ``nn.Module.load_state_dict``), ``describe_modules`` (what each
    submodule is, :func:`autograder.kernel_modules.describe_modules`), indexing and ``len``
    (a ModuleList), and ``register_forward_pre_hook``/``register_forward_hook``: the kernel
    records the submodule's inputs (outputs) and the checker's hook is called with copies
    of them after the call (it observes; what it returns is not sent back). ``isinstance``
    sees the torch class the kernel named (:attr:`torch_class`): an ``nn.Linear`` of the
    learner's is one here, a learner's own class a subclass of ``nn.Module`` of its name.
    """

    def __init__(self, session: Session, node: dict):
        super().__init__(session, node)
        self.torch_class = str(node.get("torch_class") or "")[:300]

    @property
    def __class__(self):  # noqa: D105 - what isinstance() reads after type()
        return stand_in_class(self.kind, self.torch_class)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return self._session.command("attr", self._id, name=name)

    def __bool__(self) -> bool:
        return True

    def _method(self, name: str, *args, **kwargs):
        return self._session.call(self._id, args, kwargs, method=name)[0]

    def forward(self, *args, **kwargs):
        return self._method("forward", *args, **kwargs)

    def train(self, mode: bool = True) -> RemoteModule:
        self._session.command("train", self._id, mode=bool(mode))
        return self

    def eval(self) -> RemoteModule:
        return self.train(False)

    def to(self, *args, **kwargs) -> RemoteModule:
        self._method("to", *args, **kwargs)
        return self

    def float(self) -> RemoteModule:
        return self.to(loaded_torch().float32)

    def double(self) -> RemoteModule:
        return self.to(loaded_torch().float64)

    def cpu(self) -> RemoteModule:
        return self.to("cpu")

    def cuda(self, device=None) -> RemoteModule:
        return self.to("cuda" if device is None else device)

    def requires_grad_(self, requires_grad: bool = True) -> RemoteModule:
        self._method("requires_grad_", requires_grad)
        return self

    def named_parameters(self) -> list:
        return [tuple(p) for p in self._session.command("parameters", self._id)]

    def parameters(self) -> list:
        return [t for _, t in self.named_parameters()]

    def named_buffers(self) -> list:
        return [tuple(p) for p in self._session.command("parameters", self._id, buffers=True)]

    def buffers(self) -> list:
        return [t for _, t in self.named_buffers()]

    def parameter_shapes(self) -> list[tuple[str, str, tuple]]:
        """(name, dtype name, shape) of every parameter, without their values."""
        return [(n, d, tuple(s)) for n, d, s in self._session.command(
            "parameters", self._id, values=False)]

    def state_dict(self) -> dict:
        return self._session.command("state_dict", self._id)

    def load_state_dict(self, state_dict, strict: bool = True):
        """``nn.Module.load_state_dict`` in the kernel with the checker's tensors: torch's
        ``_IncompatibleKeys`` (missing, unexpected), or the error it raised."""
        from torch.nn.modules.module import _IncompatibleKeys

        keys = self._session.command("load", self._id, args=(dict(state_dict),),
                                     strict=bool(strict))
        return _IncompatibleKeys([str(k) for k in keys["missing"]],
                                 [str(k) for k in keys["unexpected"]])

    def describe_modules(self) -> list[tuple[str, dict]]:
        return [(str(n), dict(f)) for n, f in self._session.command("modules", self._id)]

    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False):
        return self._session.capture(self, hook, "pre", with_kwargs)

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        return self._session.capture(self, hook, "post", with_kwargs)

    def __getitem__(self, index):
        return self._method("__getitem__", index)

    def __len__(self) -> int:
        n = self._method("__len__")
        if type(n) is not int or n < 0:
            raise TypeError(f"len() of the learner's {self.kind} is not a count")
        return n

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"<the learner's module {self.kind}>"


class Capture:
    """What :meth:`RemoteModule.register_forward_pre_hook` returns: ``remove()`` it."""

    def __init__(self, session: Session, number: int):
        self._session, self.number = session, number

    def remove(self) -> None:
        if self._session.hooks.pop(self.number, None) is not None:
            self._session.command("uncapture", None, capture=self.number)


def proxy(session: Session, node: dict, arrays: wire.Arrays):
    """``session``'s proxy for a handle node the kernel sent: a :class:`RemoteModule` for a
    module, a ``RemoteTensor`` (its data read from the message) for a tensor a module
    holds, a :class:`Remote` otherwise."""
    kind = node.get("kind")
    if kind == "module":
        return RemoteModule(session, node)
    if kind == "tensor":
        data = node.get("data")
        if type(data) is not dict or data.get("t") != "tensor":
            return wire.decode(data, arrays)  # a tensor that could not cross: its name
        number = node.get("id")
        if type(number) is not int:
            raise ProtocolError("a handle without a number")
        tensor = decode_tensor(data, arrays)
        out = remote_tensor_class()._make_subclass(remote_tensor_class(), tensor, False)
        out._remote = (session, number)
        return out
    return Remote(session, node)
