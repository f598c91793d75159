"""The kernel manager nbclient uses for a grading kernel (:class:`SandboxedKernelManager`):
the kernel started in a bubblewrap sandbox (:mod:`autograder.sandbox`'s rules) or forked by
the warm sandbox (:mod:`autograder.warm_sandbox`), its memory capped
(:mod:`autograder.kernel_memory`), its client quick to connect.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import default

from autograder import bwrap_box, env_vars, kernel_memory, kernel_messages, wipe
from autograder.kernel_ready import ReadyClient
from autograder.scratch import scratch_dir
from autograder.sandbox import (bwrap, copy_course, descendants, kernel_box, kernel_env,
                                rust_sysroot, sandbox_error)
from autograder.warm_sandbox import WORK_DIR, ForkedKernel
from autograder.warm_zygotes import warm_kernels, zygote_for

# Run with -I -S -c: enter the kernel's cgroups (procs files, one a line), become bubblewrap.
_ENTER_CGROUP = ("import os, sys\nfor procs in sys.argv[1].split('\\n'):\n    with open(procs, 'w') as f:\n"
                 "        f.write(str(os.getpid()))"
                 "\nos.execv(sys.argv[2], sys.argv[2:])")


def _kernel_args(cmd: list[str]) -> list[str]:
    """ipykernel's arguments (``-f FILE ...``) of the kernel command ``cmd``."""
    args = cmd[1:]
    if "-m" in args:  # python -m ipykernel_launcher -f FILE ...
        args = args[args.index("-m") + 2:]
    return args


def _fast_reconnect():
    """A ZMQ context whose sockets retry a failed connection every 5 ms, not 100 ms (most of a
    kernel's start), and take no frame past :func:`kernel_messages.max_message_bytes`."""
    import zmq
    import zmq.asyncio

    context = zmq.asyncio.Context()
    context.setsockopt(zmq.RECONNECT_IVL, 5)
    context.setsockopt(zmq.MAXMSGSIZE, kernel_messages.max_message_bytes(kernel_memory.cap()))
    return context


class FastReconnectClient(ReadyClient):
    """:class:`autograder.kernel_ready.ReadyClient` with sockets that retry their
    connection every 5 ms (:func:`_fast_reconnect`)."""

    @default("context")
    def _context_default(self):
        self._created_context = True
        return _fast_reconnect()


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels run in a bubblewrap sandbox (see the module docstring).

    nbclient creates one per notebook; the kernel's working folder (nbclient's ``cwd``,
    the submission's folder) is copied to a scratch folder that is mounted in its place.
    ``assignment`` names the exercise (its kernel's course files, the warm sandbox's preload).
    """

    assignment: str = ""

    @default("client_factory")
    def _client_factory_default(self):
        return FastReconnectClient

    @default("context")
    def _context_default(self):
        self._created_context = True
        return _fast_reconnect()

    async def _async_pre_start_kernel(self, **kw):
        error = sandbox_error()
        if error:
            raise RuntimeError(f"no sandbox for the grading kernel: {error}")
        self._zygote = zygote_for(self.assignment) if warm_kernels() else None
        self._cgroup = self._watchdog = None
        if kernel_memory.cap():
            try:
                self._cgroup = kernel_memory.KernelCgroup(kernel_memory.cap())
            except OSError:  # no cgroup here: the watchdog caps it (once it runs)
                self._cgroup = None
        if self._zygote is not None:  # a fork of the warm sandbox's interpreter
            cwd = Path(kw.get("cwd") or os.getcwd()).resolve()
            try:
                run, name = self._zygote.prepare(cwd, self.assignment)
            except RuntimeError:
                if self._zygote.alive():
                    raise
                self._zygote = zygote_for(self.assignment)  # it ended: a new one, once
                run, name = self._zygote.prepare(cwd, self.assignment)
            self._zygote_kernel = self._zygote.count  # what this manager may release
            self.scratch = None
        else:
            self.scratch = scratch_dir("autograder-kernel-", in_memory=True)
            run, name = self.scratch / "run", "kernel"
            run.mkdir()
        self.transport = "ipc"
        self.ip = str(run / name)
        self.connection_file = str(run / f"{name}.json")
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        if self._zygote is not None:
            self._fork = {"argv": _kernel_args(cmd), "cwd": WORK_DIR,
                          "env": self._kernel_env(kw, run)}
            return cmd, kw
        return self._wrap(cmd, kw), kw

    def connection_folder(self) -> Path:
        """The folder of this kernel's connection file and sockets, bound into the sandbox
        at its own path (the trusted checker makes its exchange folder there)."""
        return Path(self.connection_file).parent

    def _kernel_env(self, kw: dict, run: Path) -> dict:
        """The kernel's whole environment (``run`` is mounted at its own path: the
        connection file names it)."""
        extra = {"JUPYTER_RUNTIME_DIR": str(run), env_vars.ASSIGNMENT.name: self.assignment}
        if rust_sysroot():
            extra["RUSTC"] = str(Path(rust_sysroot(), "bin", "rustc"))
        return kernel_env(kw.get("env") or os.environ, **extra)

    def _wrap(self, cmd: list[str], kw: dict) -> list[str]:
        cwd = Path(kw.get("cwd") or os.getcwd()).resolve()
        work = self.scratch / "work"
        shutil.copytree(cwd, work, symlinks=True)
        copy_course(self.scratch / "course", self.assignment)
        run = self.scratch / "run"
        kept = kw["env"] = self._kernel_env(kw, run)
        # Our launcher instead of ipykernel's; its arguments (-f FILE ...) stay.
        inner = [sys.executable, "-m", "autograder.kernel_launch"]
        args = _kernel_args(cmd)
        # bwrap applies mounts in order: the empty /tmp comes before the binds, so that a
        # course (and its .venv) cloned under /tmp is still visible, read-only, inside.
        box = kernel_box(run, self.scratch / "course", work, str(cwd), kept)
        line = bwrap_box.command(bwrap(), box, [*inner, *args])
        if self._cgroup is not None:  # bubblewrap starts in the kernel's memory cgroup
            line = [sys.executable, "-I", "-S", "-c", _ENTER_CGROUP, self._cgroup.procs_files(),
                    *line]
        return line

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        if getattr(self, "_zygote", None) is None:
            await super()._async_launch_kernel(kernel_cmd, **kw)
        else:
            proc = self._zygote.fork(self._fork)
            if self._cgroup is not None:  # before any cell runs: ipykernel is starting
                try:
                    self._cgroup.add(proc.pid)
                except OSError:
                    self._cgroup.close()
                    self._cgroup = None
            prov = self.provisioner
            prov.process, prov.pid, prov.pgid, prov.cwd = proc, proc.pid, None, kw.get("cwd")
            self._reconcile_connection_info(prov.connection_info)
        if self._cgroup is None and kernel_memory.cap():
            self._watchdog = kernel_memory.Watchdog(
                kernel_memory.cap(), self._kernel_pids, self._kernel_tmpfs, self._kill_all,
                self._kernel_folders)
            self._watchdog.start()

    def _kernel_pids(self) -> list[int]:
        """The kernel's processes here, the forked kernel first: every process of its
        sandbox but the zygote (one kernel at a time; a daemon the kernel started is the
        zygote's child), or bubblewrap's descendants."""
        proc = getattr(self.provisioner, "process", None) if self.provisioner else None
        if proc is None:
            return []
        if isinstance(proc, ForkedKernel):
            if proc.superseded():  # the sandbox's processes are another kernel's now
                return []
            return [proc.pid] + [p for p in descendants(proc.zygote.pid) if p != proc.pid]
        return descendants(proc.pid)

    def _kernel_tmpfs(self) -> list[str]:
        """The kernel's /tmp and /dev/shm, seen from here through its root."""
        pids = self._kernel_pids()
        return [f"/proc/{pids[0]}/root{d}" for d in ("/tmp", "/dev/shm")] if pids else []

    def _kernel_folders(self) -> list[str]:
        root = self._zygote.root if getattr(self, "_zygote", None) else self.scratch
        return [str(root / "work"), str(root / "run")] if root else []  # outside its tmpfs

    def _kill_all(self) -> None:
        """SIGKILL to the kernel and every process it started (the memory cap)."""
        for pid in reversed(self._kernel_pids()):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def memory_exceeded(self) -> bool:
        """Whether the memory cap stopped a process of this kernel (the cgroup's OOM killer
        or the watchdog; :mod:`autograder.kernel_memory`)."""
        cgroup, watchdog = getattr(self, "_cgroup", None), getattr(self, "_watchdog", None)
        if cgroup is not None and cgroup.read_oom_kills() > 0:
            return True
        return bool(watchdog is not None and watchdog.fired) or getattr(self, "_oom", False)

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        # jupyter_client looks every 0.1 s whether a killed kernel exited: ours go in ms.
        await super()._async_wait(pollinterval=min(pollinterval, 0.005))

    async def interrupt_kernel(self) -> None:
        """SIGINT to the processes inside the sandbox, not to bwrap itself (which would die
        and take the kernel with it): the learner's cell gets a KeyboardInterrupt."""
        self.signal_now(signal.SIGINT)

    def signal_now(self, signum: int) -> None:
        """``signum`` to the kernel: SIGINT to the processes inside the sandbox (see
        :meth:`interrupt_kernel`), SIGKILL to the kernel (a forked one) or its sandbox."""
        proc = getattr(self.provisioner, "process", None) if self.provisioner else None
        if proc is None:
            return
        if signum == signal.SIGKILL:
            try:
                proc.kill() if isinstance(proc, ForkedKernel) else bwrap_box.kill(proc)
            except OSError:
                pass
            return
        forked = [proc.pid] if isinstance(proc, ForkedKernel) else []
        for pid in forked + descendants(proc.pid):
            try:
                with open(f"/proc/{pid}/comm", encoding="ascii") as f:
                    if f.read().strip() == "bwrap":
                        continue
                os.kill(pid, signum)
            except OSError:
                pass

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            self._remove_scratch()

    # nbclient cleans up a dead kernel with ``cleanup_resources``, bound by AsyncKernelManager
    # to the base class's coroutine: else a dead kernel's sandbox was released by __del__ only.
    cleanup_resources = _async_cleanup_resources

    def _remove_scratch(self) -> None:
        watchdog = getattr(self, "_watchdog", None)
        if watchdog is not None:
            watchdog.stop()
            self.log.info("memory watchdog: peak %d MiB of %d (%s)", watchdog.peak // 2**20,
                          watchdog.limit // 2**20, "stopped" if watchdog.fired else "under")
        zygote = getattr(self, "_zygote", None)
        if zygote is not None:  # the kernel's leftovers killed, its files wiped
            self._zygote = None
            zygote.release(getattr(self, "_zygote_kernel", None))
        cgroup = getattr(self, "_cgroup", None)
        if cgroup is not None:  # after its tmpfs files are gone: nothing is left charged
            self._oom = cgroup.read_oom_kills() > 0 or getattr(self, "_oom", False)
            cgroup.close()
            self._cgroup = None
        scratch = getattr(self, "scratch", None)
        if scratch is not None and scratch.is_dir():
            wipe.remove(scratch)

    def __del__(self):
        try:
            self._remove_scratch()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
        super().__del__()  # its control socket closed: else collecting its context hangs
