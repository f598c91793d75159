"""The trusted checker's session with one learner kernel while one notebook is graded:
requests to the kernel's thin client (:mod:`autograder.kernel_client`) as plain data, its
replies decoded into values and proxies (:mod:`autograder.remote`), tests served over one
kernel cell (:meth:`Session.serving_run`) within the kernel's time limit (stdlib only at import:
the website's in-page checker imports it too).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any, Callable

from autograder import kernel_line, serving_run, wire
from autograder.kernel_line import Served
from autograder.remote import Capture, Remote, RemoteModule, proxy
from autograder.remote_torch import torch_modes
from autograder.session_errors import ProtocolError, learner_exception


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
        self.line: kernel_line.KernelLine | None = None  # the kernel's line while a test runs
        self.km = None  # the kernel's manager (its sandbox), when the grader set it
        # How the checker stops a kernel that ran past the limit: SIGINT, then SIGKILL.
        self.interrupt: Callable[[], None] = lambda: None
        self.kill: Callable[[], None] = lambda: None
        # The checker's hooks on learner modules: capture number -> (hook, module, kwargs?)
        self.hooks: dict[int, tuple] = {}
        self.on_close: list[Callable[[], None]] = []  # run by close() (built programs' ends)
        self.marks: list[tuple[str, str]] = []  # the last test's output markers (phase())
        self.test_names: dict[str, Any] = {}  # what the test cells defined (LearnerNamespace)
        self.waiting: set[str] = set()  # the sockets of the run's tests not yet connected

    def serving(self, test: Callable[[], Any]) -> Any:
        """:meth:`serving_run` of the one test ``test``: what it returned, or raises what it
        raised (CheckStopped, TimeLimit as there)."""
        (served,) = self.serving_run([test])
        if served.raised is not None:
            raise served.raised
        return served.value

    def serving_run(self, tests: list[Callable[[], Any]]) -> list[Served]:
        """Each of ``tests`` run in turn in a thread of the checker while one kernel cell
        serves them all (:func:`autograder.kernel_client.serve_tests`), each over a socket
        of its own: every call a test makes goes over its socket, so a run of tests costs
        one kernel cell however many calls they make. Returns one :class:`Served` per test
        begun, in order: its value, or what it raised (CheckStopped when the kernel stopped
        serving first, TimeLimit past the time limit), and its output markers. The run
        stops at the first test that raised: the tests after it are not begun. Each test but
        the first begins with a marker (:meth:`phase`), the first of its ``marks``, where
        its part of the cell's outputs begins (:mod:`autograder.serving_outputs`).

        The time limit counts the kernel's time only, per test: until it connects and while
        it answers a request (the learner's code), never the checker's own work (probes,
        builds, comparisons), which a loaded machine makes slower for every learner alike.
        Past it the checker interrupts the kernel (TimeLimit), and kills it when the cell has
        not ended :data:`~autograder.kernel_line.GRACE` seconds later; so too a cell that has
        not ended within the time limit once its tests are done (:mod:`autograder.serving_run`)."""
        return serving_run.serve(self, tests)

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
            raise learner_exception(reply["raised"])
        if "value" not in reply:
            raise ProtocolError("the kernel's reply holds no value")  # nor its words: they
            # would carry what the learner's code chose into the feedback
        return self._decode(reply["value"], rid_prefix)

    def _decode(self, tree, rid_prefix: str):
        arrays = wire.Arrays(self.folder, rid_prefix)
        try:
            return wire.decode(tree, arrays, handle=lambda node: proxy(self, node, arrays))
        except wire.WireError as exc:
            raise ProtocolError(f"the kernel's reply to the checker: {exc}") from None
        except RecursionError:
            raise ProtocolError("the kernel's reply is nested too deeply") from None

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
                                                     **torch_modes(), **fields))
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

    def capture(self, module: RemoteModule, hook, when: str, with_kwargs: bool) -> Capture:
        """Watch ``module``'s inputs (``when`` ``pre``) or outputs (``post``) in the
        kernel: ``hook`` is called here with copies of them after each call that ran it."""
        number = self.command("capture", module._id, when=when)
        if type(number) is not int:
            raise ProtocolError("a capture without a number")
        self.hooks[number] = (hook, module, bool(with_kwargs))
        return Capture(self, number)

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
        kernel before the call. Under the checker's autograd mode (:func:`autograder.remote.torch_modes`)."""
        extra = {"handle": handle, **torch_modes()}
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
        self.folder.clear(keep=self.waiting)

    def close(self) -> None:
        for hook in self.on_close:
            try:
                hook()
            except Exception:  # noqa: BLE001 - the others still run
                pass
        self.folder.close()
