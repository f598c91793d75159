"""Warm kernels (the default; ``AUTOGRADER_WARM_KERNELS=0`` turns them off): a process keeps
one sandbox (:class:`Zygote`, with :mod:`autograder.sandbox`'s rules) whose PID 1,
:mod:`autograder.kernel_zygote`, has imported ipykernel and NumPy (and torch where the checks
use it) and forks each kernel, which then starts ipykernel as a freshly started kernel
would. Its root is read-only; before each kernel the grader kills every process the
previous one left, wipes ``/tmp``, ``/dev/shm``, System V IPC, the working folder (mounted
at :data:`WORK_DIR`), the course copy and the connection folder, and copies the next
notebook's folder and the course in.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from autograder import bwrap_box, sandbox, wipe
from autograder.scratch import scratch_dir
from autograder.sandbox import PACKAGE, PolledProcess, bwrap, descendants

WORK_DIR = "/submission"  # a forked kernel's working folder (a copy of the notebook's)


# What torch imports on first use rather than with torch: its symbolic shapes, and sympy,
# at the first torch.broadcast_shapes (ex05's reference solution checks masks with it):
# 0.4 to 0.7 s of the first call. Imported where nobody waits for it (:func:`ahead_of_use`).
TORCH_LAZY = ("torch.fx.experimental.symbolic_shapes",)


def ahead_of_use(preload: tuple[str, ...]) -> tuple[str, ...]:
    """``preload`` and, with torch, :data:`TORCH_LAZY`: what a process started ahead of its
    use imports (warm sandboxes, ``check --warm``'s next kernel). A check's own kernel,
    which the learner waits for, imports ``preload`` only."""
    return tuple(preload) + (TORCH_LAZY if "torch" in preload else ())


def preload_for(assignment: str) -> tuple[str, ...]:
    """Modules the warm sandbox imports for ``assignment`` beyond ipykernel and NumPy:
    ``torch`` when its checks use it (ex05, ex07), since that import alone takes ~2 s."""
    short = assignment.split("_")[0]
    files = [PACKAGE / "checks" / f"{short}.py", *(PACKAGE / "checks" / short).glob("*.py")]
    uses = any("import torch" in f.read_text(encoding="utf-8") for f in files if f.is_file())
    return ("torch",) if uses else ()


class ForkedKernel(PolledProcess):
    """The ``subprocess.Popen`` that jupyter_client's provisioner holds for a kernel forked
    by a :class:`Zygote`: ``pid`` is its PID here, its exit status comes from the zygote."""

    stdin = stdout = stderr = None

    def __init__(self, zygote: Zygote, nspid: int, pid: int):
        self.zygote, self.nspid, self.pid = zygote, nspid, pid
        self.kernel = zygote.count  # which kernel of the sandbox it is (Zygote.prepare)
        self.returncode = None

    def superseded(self) -> bool:
        """Whether the sandbox has since been prepared for another kernel: this one and all
        it left were killed then, and what runs in the sandbox now is not its own."""
        return self.zygote.count != self.kernel

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.zygote.exit_status(self.nspid)
        return self.returncode

    def pause(self) -> None:  # until the zygote reports an exit, at most 0.05 s
        with self.zygote.changed:
            self.zygote.changed.wait(0.05)

    def send_signal(self, signum: int) -> None:
        if self.poll() is None and not self.superseded():
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class Zygote:
    """A warm sandbox (same bubblewrap rules as a kernel's: no network, no course files,
    its own /tmp and /dev/shm, a read-only root) whose PID 1 is
    :mod:`autograder.kernel_zygote`, an interpreter that has imported ipykernel, NumPy and
    ``preload`` and forks one fresh kernel per notebook.

    One kernel at a time: :meth:`prepare` copies the notebook's folder and the course
    package into the sandbox once the previous kernel and every process it left are gone
    (:meth:`release`: killed, /tmp, /dev/shm, IPC objects and the working folder wiped).

    The sandbox is started by the thread that creates this object (bubblewrap's
    ``--die-with-parent`` follows that thread, so it must be one that lives as long as the
    grader: the main thread); its interpreter's start-up and imports are awaited in another
    thread, and by the first method that needs them (``wait=False`` returns at once).
    """

    def __init__(self, preload: tuple[str, ...] = (), wait: bool = True):
        self.preload = preload
        self.root = scratch_dir("autograder-zygote-", in_memory=True)  # capped writes
        for d in ("run", "course", "work"):
            (self.root / d).mkdir()
        self.modes = wipe.modes([self.root / d for d in ("run", "course", "work")], self.root)
        self.count = 0
        self.exits: dict[int, int] = {}
        self.replies: list[dict] = []
        self.changed = threading.Condition()
        self.dead = False
        self.dirty = False
        sock = self.root / "run" / "zygote.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(sock))
        listener.listen(1)
        listener.settimeout(1)  # _connect also watches the process: it may die first
        sandbox.copy_course(self.root / "course")
        box = sandbox.kernel_box(self.root / "run", self.root / "course", self.root / "work",
                                 WORK_DIR, sandbox.kernel_env(os.environ), shared=True)
        line = bwrap_box.command(bwrap(), box, [sys.executable, "-m", "autograder.kernel_zygote",
                                                str(sock), *preload])
        self.proc = subprocess.Popen(line, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     start_new_session=True)  # bwrap_box.kill
        self.conn = None
        self.pid: int | None = None  # its PID here, once it is ready
        self.error = ""
        self.dirty = True  # its own course copy (imported now) goes before the first kernel
        threading.Thread(target=self._connect, args=(listener, sock), daemon=True).start()
        if wait:
            try:
                self.wait_ready()
            except BaseException:  # its folders go with it: nobody else holds it
                self.close()
                raise

    def _connect(self, listener, sock: Path) -> None:
        """Accept the zygote's only connection (then none), then read what it sends."""
        deadline = time.monotonic() + 300
        try:
            while self.conn is None:
                try:
                    self.conn, _ = listener.accept()
                except TimeoutError:
                    if self.proc.poll() is not None:  # an import failed, say: no wait
                        raise OSError(f"it exited with status {self.proc.returncode} before "
                                      "it was ready") from None
                    if time.monotonic() > deadline:
                        raise
        except OSError as exc:
            bwrap_box.kill(self.proc)
            with self.changed:
                self.error = f"the warm kernel sandbox did not start: {exc}"
                self.dead = True
                self.changed.notify_all()
            return
        finally:
            listener.close()
            sock.unlink(missing_ok=True)
        self._read()

    def wait_ready(self) -> None:
        """Wait until the zygote has imported everything and said so."""
        if self.pid is None:
            ready = self._reply("ready", timeout=300)
            self.pid = self._host_pid(self.proc.pid, ready["ready"])

    def _read(self) -> None:
        for line in self.conn.makefile("rb"):
            msg = json.loads(line)
            with self.changed:
                if "exit" in msg:
                    self.exits[msg["exit"]] = msg["status"]
                else:
                    self.replies.append(msg)
                self.changed.notify_all()
        with self.changed:
            self.dead = True
            self.changed.notify_all()

    def _reply(self, key: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        with self.changed:
            while not any(key in r for r in self.replies):
                if self.dead or time.monotonic() > deadline:
                    raise RuntimeError(self.error or "the warm kernel sandbox stopped answering")
                self.changed.wait(0.1)
            msg = next(r for r in self.replies if key in r)
            self.replies.remove(msg)
            return msg

    def _send(self, msg: dict) -> None:
        self.conn.sendall((json.dumps(msg) + "\n").encode())

    @staticmethod
    def _host_pid(parent: int, nspid: int) -> int:
        """The PID, here, of the process below ``parent`` whose PID in the sandbox is
        ``nspid``."""
        for pid in [parent, *descendants(parent)]:
            try:
                with open(f"/proc/{pid}/status", encoding="ascii") as f:
                    ns = next(ln for ln in f if ln.startswith("NSpid:")).split()[1:]
            except (OSError, StopIteration):
                continue
            if len(ns) > 1 and int(ns[-1]) == nspid:
                return pid
        raise RuntimeError(f"no process {nspid} in the warm kernel sandbox")

    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def exit_status(self, nspid: int) -> int | None:
        with self.changed:
            if nspid in self.exits:
                return self.exits[nspid]
            return -signal.SIGKILL if self.dead else None

    def prepare(self, cwd: Path, assignment: str = "") -> tuple[Path, str]:
        """Copy the notebook's folder ``cwd`` and the course package (what ``assignment``'s
        kernel needs) into the sandbox for the next kernel; return (the run folder, the
        kernel's name in it)."""
        self.wait_ready()
        if self.dirty:
            self.release()
        if not self.alive():
            raise RuntimeError(self.error or "the warm kernel sandbox has ended")
        self.dirty = True
        self.count += 1
        sandbox.copy_course(self.root / "course", assignment)
        shutil.copytree(cwd, self.root / "work", symlinks=True, dirs_exist_ok=True)
        return self.root / "run", f"kernel{self.count}"

    def fork(self, request: dict) -> ForkedKernel:
        """Fork a kernel (see :mod:`autograder.kernel_zygote`)."""
        self.wait_ready()
        self._send({"fork": request})
        nspid = self._reply("pid")["pid"]
        return ForkedKernel(self, nspid, self._host_pid(self.pid, nspid))

    def release(self, kernel: int | None = None) -> None:
        """Kill what the last kernel left running; wipe every folder it could write.
        ``kernel`` (the :attr:`count` of a kernel's :meth:`prepare`): only while that
        kernel is the last prepared one. A kernel's manager cleaned up late (its
        ``__del__``, at garbage collection) must not kill the next learner's kernel. A
        folder that cannot be wiped (:func:`autograder.wipe.empty`) ends this sandbox: no
        later kernel runs in it (:meth:`alive` is false; a new one is started)."""
        if not self.dirty or (kernel is not None and kernel != self.count):
            return
        wiped = True
        if self.alive():
            self.wait_ready()
            self._send({"clean": True})
            wiped = self._reply("clean").get("wiped", False)
        wiped = wipe.restore_modes(self.modes) and wiped  # a kernel's chmod of its folders
        for d in ("run", "course", "work"):  # the mount points stay, their contents go
            wiped = wipe.empty(self.root / d) and wiped
        if not wiped:
            self.close()
            return
        self.dirty = False

    def close(self) -> None:
        """Stop the sandbox (every process in it) and remove its folders."""
        with self.changed:
            self.dead = True
        bwrap_box.kill(self.proc)
        self.proc.wait()
        wipe.remove(self.root)
