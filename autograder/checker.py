"""The trusted checker: hidden tests run here, in the grader, never in the learner's kernel.

For the exercises in :data:`autograder.exercises.TRUSTED`, a test cell (visible and hidden
parts, in their order) runs in the grading worker's own process, the checker, in a
namespace where each name the learner defined is a proxy (:class:`Remote`), while the
learner's kernel serves it in one cell; the learner's code runs only when the checker
calls it, and the cell's display is what the visible parts printed. Calling a proxy sends the inputs to the kernel as
plain data (:mod:`autograder.wire`), the kernel's thin client
(:mod:`autograder.kernel_client`) calls the learner's function, and the outputs come back
as plain data, which the checks judge here with the references and the expected answers,
which never enter the kernel. A test cell's points follow the checker's verdict: the
cell gets an error output when, and only when, the checker's run of it failed.

What the learner's kernel sends is the learner's answer and nothing more: a malformed
reply (not plain data, too large, another request's) is a broken protocol
(:class:`ProtocolError`, status ``tampering``), which no check can catch.
"""

from __future__ import annotations

import builtins
import os
import re
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from autograder import testing, wire

def visible_part(source: str) -> str:
    """A test cell's source without its hidden part: what the learner's released notebook
    holds (nbgrader's own ClearHiddenTests, as ``release`` runs it)."""
    import nbformat  # here, so the website's in-page Python (no nbformat) imports this module
    from nbgrader.preprocessors import ClearHiddenTests

    cell = nbformat.v4.new_code_cell(source)
    ClearHiddenTests()._remove_hidden_test_region(cell)
    return cell.source


class ProtocolError(BaseException):
    """The kernel's side of the protocol was broken (not an exception a check can catch)."""


class CheckStopped(BaseException):
    """The kernel stopped answering (it died, or a call ran past the time limit)."""


class TimeLimit(CheckStopped):
    """The learner's code in a test ran longer than the cell's time limit (the checker
    interrupted the kernel)."""


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
    submodule is, :func:`autograder.kernel_client.describe_modules`), indexing and ``len``
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
        return _stand_in_class(self.kind, self.torch_class)

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
        return self.to(_torch().float32)

    def double(self) -> RemoteModule:
        return self.to(_torch().float64)

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


_STAND_INS: dict = {}


def _torch():
    import sys

    return sys.modules.get("torch")


def _stand_in_class(kind: str, torch_class: str):
    """The class ``isinstance`` sees for a learner's module: the torch class the kernel
    named when the module is one of torch's own, else a subclass of it (``nn.Module`` when
    the kernel named none) with the learner's type name. Only classes already imported here
    count; nothing is imported by name."""
    import sys

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


class _Capture:
    """What :meth:`RemoteModule.register_forward_pre_hook` returns: ``remove()`` it."""

    def __init__(self, session: Session, number: int):
        self._session, self.number = session, number

    def remove(self) -> None:
        if self._session.hooks.pop(self.number, None) is not None:
            self._session.command("uncapture", None, capture=self.number)


def _learner_exception(info: Any) -> BaseException:
    """The checker's stand-in for an exception the learner's code raised."""
    if type(info) is not dict:
        raise ProtocolError("a malformed report of an exception")
    kinds = info.get("kinds") if type(info.get("kinds")) is list else []
    base = Exception
    for k in kinds:
        cls = getattr(builtins, k, None) if type(k) is str else None
        if isinstance(cls, type) and issubclass(cls, Exception):
            base = cls
            break
    name = re.sub(r"\W", "", str(info.get("type", "")))[:80] or "Exception"
    if name[0].isdigit():
        name = "_" + name
    message = str(info.get("message", ""))[:4000]
    return type(name, (base,), {"__module__": "learner"})(message)


class Session:
    """The checker's line to one learner kernel while one notebook is graded.

    ``execute(code)`` runs code in the kernel (the notebook client's, with its time limit);
    ``folder`` is where requests, replies and arrays are exchanged (inside the sandbox at
    the same path); ``notebook`` is the notebook being graded (its cells run again in the
    probes of :mod:`autograder.probe`); ``run_without_libraries`` runs cells and calls in
    a Python with the standard library only (:func:`autograder.probe.run`, which the
    grader passes: this module is also the website's in-page checker, which has no probe).
    """

    def __init__(self, execute: Callable[[str], None], folder: Path, notebook=None,
                 timeout: float = 60, run_without_libraries: Callable | None = None):
        self.execute, self.notebook = execute, notebook
        self.run_without_libraries = run_without_libraries
        try:
            self.folder = wire.Folder(folder)  # by descriptor: no link reroutes a write
        except OSError as exc:
            raise ProtocolError(f"the exchange folder was replaced: {exc}") from None
        # The cell time limit: seconds of the learner's code per test in the kernel, and of
        # CPU per probe (autograder.limits); the checker's own work is not counted.
        self.timeout = timeout
        self.n = 0
        self.line: _Line | None = None  # the kernel's line while a test runs
        self.km = None  # the kernel's manager (its sandbox), when the grader set it
        # How the checker stops a kernel that ran past the limit: SIGINT, then SIGKILL.
        self.interrupt: Callable[[], None] = lambda: None
        self.kill: Callable[[], None] = lambda: None
        # The checker's hooks on learner modules: capture number -> (hook, module, kwargs?)
        self.hooks: dict[int, tuple] = {}
        self.on_close: list[Callable[[], None]] = []  # run by close() (built programs' ends)
        self.marks: list[tuple[str, str]] = []  # the last test's output markers (phase())
        self.test_names: dict[str, Any] = {}  # what the test cells defined (LearnerNamespace)

    def serving(self, test: Callable[[], Any]) -> Any:
        """``test()`` run in a thread of the checker while one kernel cell serves it
        (:func:`autograder.kernel_client.serve_test`): every call the test makes goes over
        that cell's socket, so a test costs one kernel cell however many calls it makes.
        Returns what ``test`` returned, or raises what it raised; CheckStopped when the
        kernel stopped serving first.

        The time limit counts the kernel's time only: until it connects and while it
        answers a request (the learner's code), never the checker's own work (probes,
        builds, comparisons), which a loaded machine makes slower for every learner
        alike. Past the limit the checker interrupts the kernel (TimeLimit), and kills it
        when the cell has not ended :data:`GRACE` seconds later."""
        import threading

        line = self.line = _Line(self.folder, self.timeout)
        self.marks = []
        outcome: dict = {}

        def run():
            try:
                line.accept()
                outcome["value"] = test()
            except BaseException as exc:  # noqa: BLE001 - handed to the grading thread
                outcome["raised"] = exc
            finally:
                if line.overran:
                    self.interrupt()
                line.finish()
                if line.overran and not line.cell_ended.wait(GRACE):
                    self.kill()  # it ignored the interrupt (a handler, a loop in C)

        worker = threading.Thread(target=run, name="checker", daemon=True)
        worker.start()
        try:
            self.execute('__import__("autograder.kernel_client", fromlist=["serve_test"])'
                         f'.serve_test(globals(), {str(self.folder.path)!r}, {line.name!r})')
        except CheckStopped:
            if not line.overran:
                raise
        finally:
            line.kernel_done()
            worker.join()
            if line.conn is not None:
                line.conn.close()
            self.line = None
        if line.overran:
            raise TimeLimit(f"the test ran longer than the time limit ({self.timeout:g} s "
                            "of your code's time)")
        if "raised" in outcome:
            raise outcome["raised"]
        return outcome.get("value")

    def _request(self, build: Callable[[str], dict]) -> dict:
        self.n += 1
        self.rid = rid = f"r{self.n}-{secrets.token_hex(8)}"  # no name to lay a link for
        if self.line is None:
            raise ProtocolError("the checker called the kernel outside a test")
        try:
            wire.dump(build(rid), self.folder, f"{rid}.request.json")
        except OSError as exc:
            raise ProtocolError(f"the checker's request could not be written: {exc}") from None
        self.line.ask(rid)
        try:
            reply = wire.load(self.folder, f"{rid}.reply.json")
            if type(reply) is not dict or reply.get("id") != rid:
                raise ProtocolError("the kernel's reply to the checker is another request's")
        except wire.WireError as exc:
            self._clean()
            raise ProtocolError(f"the kernel's reply to the checker: {exc}") from None
        except ProtocolError:
            self._clean()
            raise
        return reply  # its arrays are read, then the folder cleared, by the caller

    def _value(self, reply: dict, rid_prefix: str):
        if "raised" in reply:
            raise _learner_exception(reply["raised"])
        if "value" not in reply:
            raise ProtocolError(f"the kernel's reply says {str(reply.get('error'))[:200]!r}")
        return self._decode(reply["value"], rid_prefix)

    def _decode(self, tree, rid_prefix: str):
        arrays = wire.Arrays(self.folder, rid_prefix)
        try:
            return wire.decode(tree, arrays, handle=lambda node: self._proxy(node, arrays))
        except wire.WireError as exc:
            raise ProtocolError(f"the kernel's reply to the checker: {exc}") from None
        except RecursionError:
            raise ProtocolError("the kernel's reply is nested too deeply") from None

    def _proxy(self, node: dict, arrays: wire.Arrays):
        """The checker's proxy for a handle node: a :class:`RemoteModule` for a module, a
        :class:`RemoteTensor` (its data read from the message) for a tensor a module holds,
        a :class:`Remote` otherwise."""
        kind = node.get("kind")
        if kind == "module":
            return RemoteModule(self, node)
        if kind == "tensor":
            data = node.get("data")
            if type(data) is not dict or data.get("t") != "tensor":
                return wire.decode(data, arrays)  # a tensor that could not cross: its name
            number = node.get("id")
            if type(number) is not int:
                raise ProtocolError("a handle without a number")
            tensor = wire.decode_tensor(data, arrays)
            out = remote_tensor_class()._make_subclass(remote_tensor_class(), tensor, False)
            out._remote = (self, number)
            return out
        return Remote(self, node)

    def _modes(self) -> dict:
        """The checker's torch mode that the learner's code runs under: autograd on or
        off (``with torch.no_grad():`` around a call reaches the kernel)."""
        torch = _torch()
        return {} if torch is None else {"grad": bool(torch.is_grad_enabled())}

    def _captured(self, reply: dict) -> list:
        """What the kernel's hooks saw during this request (decoded, not yet delivered)."""
        if "captured" not in reply:
            return []
        seen = self._decode(reply["captured"], f"{self.rid}.out")
        if type(seen) is not list or not all(
                type(e) is list and len(e) in (3, 4) and type(e[0]) is int and
                type(e[1]) is tuple and type(e[2]) is dict for e in seen):
            raise ProtocolError("a malformed report of what a hook saw")
        return seen

    def _deliver(self, seen: list) -> None:
        """Call the checker's hooks with what the kernel's hooks saw, in order."""
        for entry in seen:
            hook = self.hooks.get(entry[0])
            if hook is None:
                continue
            fn, module, with_kwargs = hook
            args, kwargs = entry[1], entry[2]
            if len(entry) == 3:
                fn(module, args, kwargs) if with_kwargs else fn(module, args)
            else:
                fn(module, args, kwargs, entry[3]) if with_kwargs else fn(module, args,
                                                                          entry[3])

    def command(self, op: str, handle: int | None, *, args: tuple = (), kwargs=None,
                **fields) -> Any:
        """One of the kernel client's commands on handle ``handle`` (see
        :func:`autograder.kernel_client.serve`): its value as plain data (or proxies), or
        the exception it raised, as a stand-in."""
        reply = self._request(lambda rid: self._args(rid, args, kwargs or {}, op, handle=handle,
                                                     **self._modes(), **fields))
        return self._reply_value(reply)

    def _reply_value(self, reply: dict):
        """A call's value from ``reply`` (or the stand-in it raised), the folder cleared,
        and what the kernel's watched submodules saw handed to the checker's hooks."""
        try:
            seen = self._captured(reply)
            try:
                value = self._value(reply, f"{self.rid}.out")
            except BaseException:
                self._clean()
                self._deliver(seen)
                raise
        finally:
            self._clean()
        self._deliver(seen)
        return value

    def show(self, text: str) -> None:
        """``text`` printed in the kernel's cell: the display of the test cell's visible
        code, which runs here."""
        self._reply_value(self._request(lambda rid: {"op": "show", "text": str(text)}))

    def phase(self, hidden: bool) -> None:
        """Mark the kernel cell's outputs: what the learner's code prints from here on is
        dropped (``hidden``: the hidden tests' inputs stay hidden) or shown. Each marker
        has a fresh token, kept in :attr:`marks` for the display's filter."""
        mark = ("hidden" if hidden else "visible", secrets.token_hex(16))
        self.marks.append(mark)
        self._reply_value(self._request(lambda rid: {"op": "phase", "hidden": bool(hidden),
                                                     "token": mark[1]}))

    def capture(self, module: RemoteModule, hook, when: str, with_kwargs: bool) -> _Capture:
        """Watch ``module``'s inputs (``when`` ``pre``) or outputs (``post``) in the
        kernel: ``hook`` is called here with copies of them after each call that ran it."""
        number = self.command("capture", module._id, when=when)
        if type(number) is not int:
            raise ProtocolError("a capture without a number")
        self.hooks[number] = (hook, module, bool(with_kwargs))
        return _Capture(self, number)

    def resolve(self, name: str):
        """The learner's ``name``: plain data as a value, a function or class as a
        :class:`Remote`. Raises KeyError when the kernel has no such name."""
        reply = self._request(lambda rid: {"op": "resolve", "name": name})
        try:
            if reply.get("missing") is True:
                raise KeyError(name)
            return self._value(reply, f"{self.rid}.out")
        finally:
            self._clean()

    def _args(self, rid: str, args, kwargs, op: str, **extra) -> dict:
        """A request's arguments: plain data, tensors as data, and a proxy of this
        kernel's (a learner's module passed to a learner's function) as its number."""
        arrays = wire.Arrays(self.folder, f"{rid}.in")

        def handle(value):
            if isinstance(value, Remote) and value._session is self:
                return {"t": "handle", "id": value._id}
            return None

        return {"op": op, "args": wire.encode(tuple(args), arrays, handle=handle),
                "kwargs": wire.encode(dict(kwargs), arrays, handle=handle), **extra}

    def call(self, handle: int, args, kwargs, *, method: str | None = None,
             seed: int | None = None) -> tuple[Any, list[int]]:
        """The learner's function ``handle`` (or its ``method``) called with ``args``: (its
        result, the positions of the list, array and tensor arguments the call changed in
        the kernel), or the exception it raised (as a stand-in of the same kind and
        message). The checker's own arguments never change: what a check expects is
        computed from the inputs it sent. ``seed``: ``torch.manual_seed(seed)`` in the
        kernel before the call. Under the checker's autograd mode (:meth:`_modes`)."""
        extra = {"handle": handle, **self._modes()}
        if method is not None:
            extra["method"] = method
        if seed is not None:
            extra["seed"] = int(seed)
        reply = self._request(lambda rid: self._args(rid, args, kwargs, "call", **extra))
        result = self._reply_value(reply)
        changed = reply.get("changed")
        if type(changed) is not list or not all(type(i) is int for i in changed):
            raise ProtocolError("a malformed report of changed arguments")
        return result, changed

    def _clean(self) -> None:
        self.folder.clear()

    def close(self) -> None:
        for hook in self.on_close:
            try:
                hook()
            except Exception:  # noqa: BLE001 - the others still run
                pass
        self.folder.close()

    def without_libraries(self, calls: list[tuple[str, tuple]]) -> tuple[list, list[str]]:
        """The setup and solution cells run again in a fresh Python with the standard
        library only
        (:mod:`autograder.probe`), and ``calls`` (name, args) made there: each result, or
        the exception raised as a stand-in; and the array libraries the cells tried to
        import there (:data:`autograder.testing.BANNED_MODULES`)."""
        if self.run_without_libraries is None:
            raise RuntimeError("this session has no standard-library probe")
        replies, tried = self.run_without_libraries(setup_and_solution_cells(self.notebook),
                                                    calls, testing.BANNED_MODULES, self.timeout)
        out = []
        for reply in replies:
            if type(reply) is not dict:
                raise ProtocolError("a malformed reply from the standard-library probe")
            if "raised" in reply:
                out.append(_learner_exception(reply["raised"]))
            elif "value" in reply:
                try:
                    out.append(wire.decode(reply["value"], wire.Arrays(self.folder, "none")))
                except wire.WireError as exc:
                    raise ProtocolError(f"the probe's reply: {exc}") from None
            else:
                raise ProtocolError("a malformed reply from the standard-library probe")
        return out, [str(t)[:100] for t in tried]


def setup_and_solution_cells(nb) -> list[str]:
    """The setup cells (locked instructor code) and solution cells of ``nb``, in order:
    what defines the graded functions (contract: each in its own solution cell)."""
    cells = nb.cells if nb is not None else []
    return [c.source for c in cells if c.cell_type == "code" and (
        (meta := c.get("metadata", {}).get("nbgrader", {})).get("solution")
        or (meta.get("locked") and not meta.get("grade")))]


# Seconds a kernel interrupted at the time limit has to end its cell before it is killed.
GRACE = 10.0
now = time.monotonic  # the clock the kernel's time is read from (tests give their own)


class _Line:
    """The socket one kernel cell serves a test over: the checker sends a request's id,
    the kernel sends it back when its reply is written. Only ids cross here; requests and
    replies are files (:mod:`autograder.wire`). The checker waits until the kernel answers,
    connects or ends its cell, and counts the time it waits: the kernel's time, of which
    a test may take ``limit`` seconds (:attr:`overran` past that)."""

    def __init__(self, folder: wire.Folder, limit: float | None = None):
        import socket
        import threading

        self.name = f"line-{secrets.token_hex(8)}"
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(wire.socket_path(folder.fd, str(folder.path), self.name))
        self.listener.listen(1)
        self.conn = None
        self.ended = False  # the kernel's cell has ended
        self.cell_ended = threading.Event()
        self.reader = None
        self.left = float(limit) if limit and limit > 0 else None  # kernel seconds left
        self.overran = False

    def _spend(self, start: float) -> None:
        if self.left is not None:
            self.left -= now() - start
            if self.left <= 0:
                self.overran = True
                raise CheckStopped("the test ran longer than the time limit")

    def accept(self) -> None:
        import select

        start = now()
        try:
            while self.conn is None:
                ready, _, _ = select.select([self.listener], [], [], 0.05)
                if ready:
                    self.conn, _ = self.listener.accept()
                    self.reader = self.conn.makefile("rb")
                elif self.ended:
                    break
                else:
                    self._spend(start)
                    start = now()
        except (OSError, ValueError):
            pass
        if self.conn is None:
            raise ProtocolError("the kernel did not serve the checker's test (its cell "
                                "ran something else)")

    def ask(self, rid: str) -> None:
        """Send ``rid`` and wait until the kernel says its reply is written (CheckStopped
        when the test's time is used up first)."""
        start = now()
        try:
            self.conn.settimeout(None if self.left is None else max(self.left, 0.001))
            self.conn.sendall(rid.encode("ascii") + b"\n")
            answer = self.reader.readline(200)
        except TimeoutError:  # socket.timeout: the kernel's time is used up
            self.overran = True
            raise CheckStopped("the test ran longer than the time limit") from None
        except (OSError, ValueError, AttributeError):
            answer = b""
        self._spend(start)
        if not answer:
            raise CheckStopped("the kernel stopped answering the checker (a call ran past "
                               "the time limit, or the kernel died)")
        if answer != rid.encode("ascii") + b"\n":
            raise ProtocolError("the kernel answered another request than the checker's")

    def finish(self) -> None:
        """The test is over: tell the kernel's cell to end (in the checker's thread)."""
        try:
            if self.conn is not None:
                self.conn.sendall(b"done\n")
        except OSError:
            pass
        self.listener.close()

    def kernel_done(self) -> None:
        """The kernel's cell ended: nothing more will be answered (the grading thread;
        a wait for a reply ends at once, a wait for the kernel to connect at its next
        look)."""
        import socket

        self.ended = True
        self.cell_ended.set()
        conn = self.conn
        if conn is not None:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class SetupNamespace(dict):
    """The setup cells' names, run here: a function they define (ex05's ``make_pair``)
    finds a learner's name (the class it builds) in the kernel when a test calls it, each
    time anew; outside a test, as before the learner's cells ran, there is none."""

    session: Session | None = None

    def __missing__(self, name: str):
        session = self.session
        if name.startswith("__") or hasattr(builtins, name) or session is None or \
                session.line is None:
            raise KeyError(name)
        value = session.resolve(name)
        if isinstance(value, Remote):
            value.bound_as = name
        return value


class LearnerNamespace(dict):
    """The checker's namespace for one test cell: the setup cells' names (run here, from
    the source notebook), the names earlier test cells defined (as in the notebook, where
    a test cell's ``trained_model`` is there for the next: :meth:`keep`), and each other
    name looked up in the learner's kernel when the test first uses it."""

    def __init__(self, session: Session, base: dict):
        super().__init__(base)
        self._session = session
        self._base = set(base)
        self._resolved: set[str] = set()
        if isinstance(base, SetupNamespace):
            base.session = session

    def __missing__(self, name: str):
        if name.startswith("__") or hasattr(builtins, name):
            raise KeyError(name)
        if name in self._session.test_names:
            value = self[name] = self._session.test_names[name]
            return value
        value = self._session.resolve(name)
        if isinstance(value, Remote):
            value.bound_as = name
        self[name] = value
        self._resolved.add(name)
        return value

    def keep(self) -> None:
        """Keep the names this test cell defined for the later ones (never a name found in
        the kernel: that is looked up anew in each test)."""
        for name, value in self.items():
            if name not in self._base and name not in self._resolved and \
                    not name.startswith("__") and name != "print":
                self._session.test_names[name] = value


# Per exercise, "module:function" of a builder ``f(session) -> {name: callable}``: learner
# functions the grader builds itself from the submitted notebook (``session.notebook``),
# which the checker calls in place of the kernel's objects of those names (ex08: the Rust
# cells, compiled and run by the grader, so no Python object can pose as them).
BUILT: dict[str, str] = {"ex08_rust_attention": "autograder.rust_build:built_functions"}


def built_functions(assignment: str, session: Session) -> dict:
    """The names :data:`BUILT` gives ``assignment``'s tests (none for most exercises)."""
    import importlib

    spec = BUILT.get(assignment)
    if not spec:
        return {}
    module, _, function = spec.partition(":")
    return getattr(importlib.import_module(module), function)(session)


def setup_namespace(sources: list[str]) -> dict:
    """The names of the notebook's setup cells (locked instructor code), run here."""
    ns: dict = SetupNamespace({"__name__": "__main__"})
    for source in sources:
        code = "\n".join(ln for ln in source.splitlines()
                         if not ln.lstrip().startswith(("%", "!")))
        try:
            exec(compile(code, "<setup cell>", "exec"), ns)
        except Exception:  # noqa: BLE001 - the kernel shows the same error to the learner
            pass
    return ns


# nbgrader's hidden-test delimiters (ClearHiddenTests' defaults, which the course keeps),
# found as nbgrader finds them: anywhere in a line.
HIDDEN_TESTS_BEGIN, HIDDEN_TESTS_END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"


def segments(source: str) -> list[tuple[bool, str]]:
    """A test cell's source cut at nbgrader's hidden-test delimiters: (hidden, code) in
    order, each code padded with blank lines so its line numbers are the cell's."""
    out, hidden, code, first = [], False, [], 0
    for n, line in enumerate(source.splitlines(keepends=True)):
        delimiter = HIDDEN_TESTS_END if hidden else HIDDEN_TESTS_BEGIN
        if delimiter in line:
            if code:
                out.append((hidden, "\n" * first + "".join(code)))
            hidden, code, first = not hidden, [], n + 1
        else:
            code.append(line)
    if code:
        out.append((hidden, "\n" * first + "".join(code)))
    return out


def run_test(session: Session, source: str, setup: dict, where: str) -> tuple[str, str] | None:
    """Run a test cell's whole source, visible and hidden parts in their order, here in the
    checker while one kernel cell serves it (:meth:`Session.serving`): None when it
    passed, else (error name, message). The visible parts' prints are shown in the
    kernel's cell; the learner's output during the hidden parts is not. ProtocolError and
    CheckStopped propagate."""
    parts = segments(source)
    state = {"hidden": False}

    def shown_print(*values, sep=" ", end="\n", file=None, flush=False):
        if not state["hidden"]:
            session.show(str(sep).join(map(str, values)) + str(end))

    def test():
        ns = LearnerNamespace(session, setup)
        ns["print"] = shown_print
        try:
            for hidden, code in parts:
                if hidden != state["hidden"]:
                    state["hidden"] = hidden
                    session.phase(hidden)
                with testing.hidden_part(hidden):
                    exec(compile(code, f"<test {where}>", "exec"), ns)
        except (ProtocolError, CheckStopped):
            raise
        except BaseException as exc:  # noqa: BLE001 - the verdict of a failing check
            if state["hidden"] and not (isinstance(exc, AssertionError)
                                        and type(exc).__module__ != "learner") \
                    and not testing.course_raised(exc):
                # Not a check's verdict (CheckFailed, whose messages show no hidden value)
                # but an exception out of the learner's code or of comparing its result: its
                # message and class name can carry the hidden inputs. A Rust compile error
                # (rustc on the learner's own cells, raised by the grader) keeps both.
                return testing.error_kind(exc), ("raised in a hidden part of the test (its "
                                                 "message is not shown)")
            message = str(exc)[:4000]
            return type(exc).__name__, (testing.mark_hidden_case(message) if state["hidden"]
                                        else message)
        finally:
            ns.keep()
        return None

    return session.serving(test)


def exchange_folder(km) -> tuple[Path, bool]:
    """(folder, made here) for the requests of kernel manager ``km``'s kernel: a new folder
    with an unpredictable name in its connection folder when that is the sandbox's (bound
    at its own path), else a new private one."""
    run = getattr(km, "connection_folder", None)
    if callable(run):
        folder = run() / f"exchange-{secrets.token_hex(8)}"
        try:
            os.mkdir(folder, 0o755)  # fails if anything is there already
        except OSError as exc:
            raise ProtocolError(f"the exchange folder could not be made: {exc}") from None
        return folder, False
    return Path(tempfile.mkdtemp(prefix="autograder-exchange-")), True


def remove_folder(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def new_cell_like(cell, code: str):
    """A code cell holding ``code`` with ``cell``'s metadata (so a time-out names it)."""
    import nbformat  # see visible_part

    new = nbformat.v4.new_code_cell(code)
    new.metadata = cell.metadata
    return new
