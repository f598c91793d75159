"""Grading kernels in a sandbox built with bubblewrap (``bwrap``, Debian package ``bubblewrap``).

Each kernel that grades a submission runs inside ``bwrap`` (the sandbox Flatpak uses) with:

- its own namespaces for processes, network, IPC and hostname (``--unshare-all``): no
  network at all, and killing the sandbox kills everything the learner's code started
  (``--die-with-parent``, the sandbox's init is PID 1 of its namespace);
- a root file system that shows only what a kernel needs, read-only: ``/usr``, ``/etc``,
  the Python installation and the virtual environment; a fresh ``/tmp`` and ``$HOME``;
- the memory cap (``grade --memory-mb``) on every page the kernel makes resident: a memory
  cgroup per kernel, or a watchdog where none can be made, and ``/tmp`` and ``/dev/shm``
  of at most the cap each (:mod:`autograder.kernel_memory`);
- a writable *scratch copy* of the submission's folder, mounted where the folder is, so
  relative paths work and nothing the learner writes reaches the real one;
- the public part of the course's Python package (:data:`KERNEL_FILES`: the visible
  tests' helpers, the plain-data client; for ex07 the helpers its notebook gives), read-only:
  the reference implementations, the checks and ``solutions/`` are not in the sandbox at
  all (they run in the trusted checker, :mod:`autograder.checker`).

The course folder, ``solutions/``, the gradebook, the workspace, other submissions and the
home folder are not mounted. The kernel talks to nbclient over Jupyter's ``ipc`` transport
(Unix sockets in a folder bound into the sandbox at its own path), since it has no network;
the checker's exchange folder is made in the same folder.

Warm kernels (the default; ``AUTOGRADER_WARM_KERNELS=0`` turns them off): a process keeps
one such sandbox (:class:`Zygote`) whose PID 1, :mod:`autograder.kernel_zygote`, has
imported ipykernel and NumPy (and torch where the checks use it) and forks each kernel,
which then starts ipykernel as a freshly started kernel would. Its root is read-only; before
each kernel the grader kills every process the previous one left, wipes ``/tmp``,
``/dev/shm``, System V IPC, the working folder (mounted at :data:`WORK_DIR`), the course
copy and the connection folder, and copies the next notebook's folder and the course in.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import default

from autograder import kernel_memory
from autograder.memory import child_pids
from autograder.rust import find_rustc

PACKAGE = Path(__file__).resolve().parent
COURSE_DIR = "/opt/autograder-course"  # inside the sandbox: the package's public files
# Environment variables a kernel keeps; everything else (tokens, paths) is dropped.
KEEP_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONUTF8", "PYTHONIOENCODING",
            "MPLBACKEND", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
            "PYTHONHASHSEED", "JPY_PARENT_PID", "CUDA_VISIBLE_DEVICES", "TZ")


def bwrap() -> str | None:
    """Path of the ``bwrap`` executable (``$AUTOGRADER_BWRAP`` if set), None when missing."""
    return shutil.which(os.environ.get("AUTOGRADER_BWRAP") or "bwrap")


@functools.lru_cache(maxsize=None)
def sandbox_error() -> str | None:
    """Why no sandbox can start on this machine, or None when one can."""
    exe = bwrap()
    if exe is None:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    try:
        # The tmpfs first: binds after it stay visible when Python lives under /tmp.
        done = subprocess.run([exe, "--unshare-all", "--die-with-parent", "--proc", "/proc",
                               "--dev", "/dev", "--tmpfs", "/tmp", *system_binds(),
                               sys.executable, "-c", "print('ok')"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap could not run: {exc}"
    if done.returncode != 0 or done.stdout.strip() != "ok":
        return f"bwrap could not start a sandbox: {(done.stderr or done.stdout).strip()[:300]}"
    return None


@functools.lru_cache(maxsize=None)
def bwrap_has_size() -> bool:
    """Whether this bubblewrap has ``--size`` (a tmpfs of at most N bytes)."""
    try:
        done = subprocess.run([bwrap(), "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError, TypeError):
        return False
    return "--size" in (done.stdout + done.stderr)


def tmpfs_size_args() -> list[str]:
    """bubblewrap's ``--size M`` to put before a ``--tmpfs`` (nothing without a memory cap
    or where this bubblewrap lacks the option)."""
    cap = kernel_memory.cap()
    return ["--size", str(cap)] if cap and bwrap_has_size() else []


def _scratch_tmpfs() -> list[str]:
    """The sandbox's ``/dev/shm`` and ``/tmp``: tmpfs mounts of at most the memory cap each
    (:mod:`autograder.kernel_memory`)."""
    size = tmpfs_size_args()
    return [*size, "--tmpfs", "/dev/shm", *size, "--tmpfs", "/tmp"]


# Run with -I -S -c: enter the kernel's memory cgroup, then become bubblewrap (whose
# sandbox, forked after this, starts in it).
_ENTER_CGROUP = ("import os, sys\nwith open(sys.argv[1], 'w') as f:\n    f.write(str(os.getpid()))"
                 "\nos.execv(sys.argv[2], sys.argv[2:])")


def system_binds() -> list[str]:
    """Read-only binds of the operating system and the Python that runs the kernel."""
    args = []
    for top in ("/usr", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin"):
        p = Path(top)
        if p.is_symlink():  # merged /usr: /bin -> usr/bin
            args += ["--symlink", os.readlink(p), top]
        elif p.is_dir():
            args += ["--ro-bind", top, top]
    roots = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(),
             Path(sys.executable).resolve().parent.parent}
    sysroot = _rust_sysroot()  # the Rust exercise compiles learner cells in the kernel
    if sysroot:
        roots.add(Path(sysroot))
    for extra in os.environ.get("AUTOGRADER_SANDBOX_RO", "").split(os.pathsep):
        if extra:
            roots.add(Path(extra).resolve())
    usr = Path("/usr")
    for root in sorted(roots):
        if not (root == usr or usr in root.parents) and root.is_dir():
            args += ["--ro-bind", str(root), str(root)]
    for dev in sorted(Path("/dev").glob("nvidia*")) + [Path("/dev/dri")]:
        if dev.exists():
            args += ["--dev-bind-try", str(dev), str(dev)]
    return args


@functools.lru_cache(maxsize=None)
def _rust_sysroot() -> str | None:
    """The Rust toolchain's own folder (not rustup's proxies in the home folder), if any."""
    try:
        rustc = find_rustc()
        if not rustc:
            return None
        done = subprocess.run([rustc, "--print", "sysroot"], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    root = done.stdout.strip()
    return str(Path(root).resolve()) if done.returncode == 0 and Path(root, "bin").is_dir() \
        else None


# What a kernel of an exercise whose hidden tests run in the checker (autograder.checker)
# gets of the course package: the launchers, the visible tests' helpers, the client and the
# in-notebook check's recorder (its set-up cell loads it).
# No reference, no check, no answer.
KERNEL_FILES = ("__init__.py", "config.py", "exercises.py", "testing.py", "verdicts.py", "wire.py",
                "kernel_client.py", "kernel_launch.py", "kernel_zygote.py", "rust.py",
                "in_notebook.py", "brief_tracebacks.py")
# What an exercise's released notebook imports beyond those (the helpers it gives).
KERNEL_EXTRA = {"ex07_transformer": ("transformer_given.py",)}


def copy_course(dest: Path, assignment: str | None = None) -> None:
    """The part of the Python package the kernel gets: :data:`KERNEL_FILES` and
    ``assignment``'s :data:`KERNEL_EXTRA` (None: the warm sandbox's own start)."""
    (dest / "autograder").mkdir(parents=True, exist_ok=True)
    for name in KERNEL_FILES + KERNEL_EXTRA.get(assignment or "", ()):
        shutil.copyfile(PACKAGE / name, dest / "autograder" / name)


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc/PID/task/*/children), parents first."""
    out, todo = [], [pid]
    while todo:
        kids = child_pids(todo.pop(0))
        out += kids
        todo += kids
    return out


def _kernel_args(cmd: list[str]) -> list[str]:
    """ipykernel's arguments (``-f FILE ...``) of the kernel command ``cmd``."""
    args = cmd[1:]
    if "-m" in args:  # python -m ipykernel_launcher -f FILE ...
        args = args[args.index("-m") + 2:]
    return args


# --- Warm kernels: one sandbox per grading worker forks a fresh kernel per notebook -------

WORK_DIR = "/submission"  # a forked kernel's working folder (a copy of the notebook's)


def warm_kernels() -> bool:
    """Whether grading kernels are forked from a warm sandbox (:class:`Zygote`); set
    ``AUTOGRADER_WARM_KERNELS=0`` for one new sandbox and interpreter per kernel."""
    return os.environ.get("AUTOGRADER_WARM_KERNELS", "1") != "0"


def preload_for(assignment: str) -> tuple[str, ...]:
    """Modules the warm sandbox imports for ``assignment`` beyond ipykernel and NumPy:
    ``torch`` when its checks use it (ex05, ex07), since that import alone takes ~2 s."""
    short = assignment.split("_")[0]
    files = [PACKAGE / "checks" / f"{short}.py", *(PACKAGE / "checks" / short).glob("*.py")]
    uses = any("import torch" in f.read_text(encoding="utf-8") for f in files if f.is_file())
    return ("torch",) if uses else ()


class PolledProcess:
    """What callers use of a ``subprocess.Popen`` (``pid``, ``returncode``, ``poll``,
    ``wait``) for a process that is not this process's child by ``Popen``: a subclass says
    how to :meth:`poll` it and how to :meth:`pause` between two looks."""

    pid: int
    returncode: int | None = None

    def poll(self) -> int | None:
        raise NotImplementedError

    def pause(self) -> None:
        time.sleep(0.005)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            self.pause()
        return self.returncode


class ForkedKernel(PolledProcess):
    """The ``subprocess.Popen`` that jupyter_client's provisioner holds for a kernel forked
    by a :class:`Zygote`: ``pid`` is its PID here, its exit status comes from the zygote."""

    stdin = stdout = stderr = None

    def __init__(self, zygote: Zygote, nspid: int, pid: int):
        self.zygote, self.nspid, self.pid = zygote, nspid, pid
        self.returncode = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.zygote.exit_status(self.nspid)
        return self.returncode

    def pause(self) -> None:  # until the zygote reports an exit, at most 0.05 s
        with self.zygote.changed:
            self.zygote.changed.wait(0.05)

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
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
        import socket

        self.preload = preload
        self.root = Path(tempfile.mkdtemp(prefix="autograder-zygote-"))
        for d in ("run", "course", "work"):
            (self.root / d).mkdir()
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
        copy_course(self.root / "course")
        env = {k: v for k, v in os.environ.items() if k in KEEP_ENV}
        env.update(HOME="/tmp", MPLCONFIGDIR="/tmp/matplotlib", PYTHONPATH=COURSE_DIR,
                   PYTHONDONTWRITEBYTECODE="1", IPYTHONDIR="/tmp/ipython")
        run = self.root / "run"
        box = [bwrap(), "--unshare-all", "--die-with-parent", "--as-pid-1", "--cap-drop", "ALL",
               "--proc", "/proc", "--dev", "/dev", *_scratch_tmpfs(),
               *system_binds(),
               "--bind", str(run), str(run),
               "--bind", str(self.root / "course"), COURSE_DIR,
               "--bind", str(self.root / "work"), WORK_DIR,
               # kernels share this sandbox one after another: nothing writable but the
               # folders wiped between them
               "--remount-ro", "/", "--remount-ro", "/dev",
               "--chdir", WORK_DIR, "--clearenv"]
        for k, v in env.items():
            box += ["--setenv", k, v]
        box += ["--", sys.executable, "-m", "autograder.kernel_zygote", str(sock), *preload]
        self.proc = subprocess.Popen(box, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.conn = None
        self.pid: int | None = None  # its PID here, once it is ready
        self.error = ""
        self.dirty = True  # its own course copy (imported now) goes before the first kernel
        threading.Thread(target=self._connect, args=(listener, sock), daemon=True).start()
        if wait:
            self.wait_ready()

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
            self.proc.kill()
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
        for pid in [parent, *_descendants(parent)]:
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
        self.dirty = True
        self.count += 1
        copy_course(self.root / "course", assignment)
        shutil.copytree(cwd, self.root / "work", symlinks=True, dirs_exist_ok=True)
        return self.root / "run", f"kernel{self.count}"

    def fork(self, request: dict) -> ForkedKernel:
        """Fork a kernel (see :mod:`autograder.kernel_zygote`)."""
        self.wait_ready()
        self._send({"fork": request})
        nspid = self._reply("pid")["pid"]
        return ForkedKernel(self, nspid, self._host_pid(self.pid, nspid))

    def release(self) -> None:
        """Kill what the last kernel left running; wipe every folder it could write."""
        if not self.dirty:
            return
        if self.alive():
            self.wait_ready()
            self._send({"clean": True})
            self._reply("clean")
        for d in ("run", "course", "work"):  # the mount points stay, their contents go
            for p in (self.root / d).iterdir():
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)
        self.dirty = False

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


_ZYGOTE: list[Zygote] = []  # this process's warm sandbox (a grading worker has one)
_ZYGOTE_LOCK = threading.Lock()  # prewarm's thread and the first kernel may ask at once


def zygote_for(assignment: str, preload: tuple[str, ...] | None = None,
               wait: bool = True) -> Zygote:
    """This process's warm sandbox, (re)started when it died or lacks a module that
    ``assignment``'s checks import (or a module of ``preload``, when given); ``wait=False``:
    without waiting for its imports (see :class:`Zygote`)."""
    need = preload_for(assignment) if preload is None else preload
    with _ZYGOTE_LOCK:
        if _ZYGOTE and _ZYGOTE[0].alive() and set(need) <= set(_ZYGOTE[0].preload):
            return _ZYGOTE[0]
        if _ZYGOTE:
            old = _ZYGOTE.pop()
            need = tuple(sorted(set(need) | set(old.preload)))
            old.close()
        zygote = Zygote(need, wait=wait)
        if not _ZYGOTE:
            import atexit

            atexit.register(close_warm)
        _ZYGOTE.append(zygote)
        return zygote


def close_warm() -> None:
    """Stop this process's warm sandbox and remove its files (at exit)."""
    if _ZYGOTE:
        _ZYGOTE.pop().close()


def prewarm(assignments) -> None:
    """Start this process's warm sandbox now, with what the checks of every one of
    ``assignments`` import, without waiting for it: its start-up overlaps the grader's own
    (a grading worker calls this when it starts). A sandbox that fails to start is started
    again, and its error reported, by the first kernel."""
    try:
        zygote_for("", tuple(sorted({m for a in assignments for m in preload_for(a)})),
                   wait=False)
    except Exception:  # noqa: BLE001 - see the docstring
        pass


def _fast_reconnect():
    """A ZMQ context whose sockets retry a failed connection every 5 ms instead of 100 ms.

    The grader connects to a kernel's ``ipc`` sockets as soon as the kernel is started, before
    the kernel has made them; ZMQ's default 100 ms between tries was most of the time a
    kernel took to answer (benchmarks/bench_grading.py --profile)."""
    import zmq
    import zmq.asyncio

    context = zmq.asyncio.Context()
    context.setsockopt(zmq.RECONNECT_IVL, 5)
    return context


def _ready_client_class():
    from jupyter_client.asynchronous import AsyncKernelClient

    class ReadyClient(AsyncKernelClient):
        """jupyter_client's client, less the 0.2 s of silence on IOPub it waits for once the
        kernel answered (nbclient reads only the IOPub messages of each cell's request), and
        with sockets that retry their connection every 5 ms (:func:`_fast_reconnect`)."""

        @default("context")
        def _context_default(self):
            self._created_context = True
            return _fast_reconnect()

        async def wait_for_ready(self, timeout: float | None = None) -> None:
            import queue

            deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
            while True:
                self.kernel_info()
                try:
                    msg = await self.shell_channel.get_msg(timeout=1)
                except queue.Empty:
                    pass
                else:
                    if msg["msg_type"] == "kernel_info_reply":
                        try:  # IOPub connected: the kernel's status reaches it
                            await self.iopub_channel.get_msg(timeout=0.2)
                        except queue.Empty:
                            pass
                        else:
                            self._handle_kernel_info_reply(msg)
                            return
                if not await self._async_is_alive():
                    raise RuntimeError("Kernel died before replying to kernel_info")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kernel didn't respond in {timeout:.0f} seconds")

    return ReadyClient


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels run in a bubblewrap sandbox (see the module docstring).

    nbclient creates one per notebook; the kernel's working folder (nbclient's ``cwd``,
    the submission's folder) is copied to a scratch folder that is mounted in its place.
    ``assignment`` names the exercise (what its kernel gets of the course, what the warm
    sandbox preloads).
    """

    assignment: str = ""

    @default("client_factory")
    def _client_factory_default(self):
        return _ready_client_class()

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
            run, name = self._zygote.prepare(cwd, self.assignment)
            self.scratch = None
        else:
            self.scratch = Path(tempfile.mkdtemp(prefix="autograder-kernel-"))
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
        env = kw.get("env") or dict(os.environ)
        kept = {k: v for k, v in env.items() if k in KEEP_ENV}
        kept.update(HOME="/tmp", MPLCONFIGDIR="/tmp/matplotlib", PYTHONPATH=COURSE_DIR,
                    PYTHONDONTWRITEBYTECODE="1", JUPYTER_RUNTIME_DIR=str(run),
                    IPYTHONDIR="/tmp/ipython", AUTOGRADER_ASSIGNMENT=self.assignment)
        if _rust_sysroot():
            kept["RUSTC"] = str(Path(_rust_sysroot(), "bin", "rustc"))
        return kept

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
        box = [bwrap(), "--unshare-all", "--die-with-parent", "--cap-drop", "ALL",
               "--proc", "/proc", "--dev", "/dev", *_scratch_tmpfs(),
               *system_binds(),
               "--bind", str(run), str(run),
               "--bind", str(self.scratch / "course"), COURSE_DIR,
               "--bind", str(work), str(cwd), "--chdir", str(cwd), "--clearenv"]
        for k, v in kept.items():
            box += ["--setenv", k, v]
        if self._cgroup is not None:  # bubblewrap starts in the kernel's memory cgroup
            box = [sys.executable, "-I", "-S", "-c", _ENTER_CGROUP, self._cgroup.procs_file(),
                   *box]
        return [*box, "--", *inner, *args]

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
                kernel_memory.cap(), self._kernel_pids, self._kernel_tmpfs, self._kill_all)
            self._watchdog.start()

    def _kernel_pids(self) -> list[int]:
        """The kernel's processes here, the forked kernel first: every process of its
        sandbox but the zygote (one kernel at a time; a daemon the kernel started is the
        zygote's child), or bubblewrap's descendants."""
        proc = getattr(self.provisioner, "process", None) if self.provisioner else None
        if proc is None:
            return []
        if isinstance(proc, ForkedKernel):
            return [proc.pid] + [p for p in _descendants(proc.zygote.pid) if p != proc.pid]
        return _descendants(proc.pid)

    def _kernel_tmpfs(self) -> list[str]:
        """The kernel's /tmp and /dev/shm, seen from here through its root."""
        pids = self._kernel_pids()
        return [f"/proc/{pids[0]}/root{d}" for d in ("/tmp", "/dev/shm")] if pids else []

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
        # jupyter_client looks every 0.1 s whether a killed kernel has exited; a kernel of
        # the sandbox is gone within milliseconds, and each look costs microseconds.
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
                proc.kill()
            except OSError:
                pass
            return
        forked = [proc.pid] if isinstance(proc, ForkedKernel) else []
        for pid in forked + _descendants(proc.pid):
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

    def _remove_scratch(self) -> None:
        watchdog = getattr(self, "_watchdog", None)
        if watchdog is not None:
            watchdog.stop()
            self.log.info("memory watchdog: peak %d MiB of %d (%s)", watchdog.peak // 2**20,
                          watchdog.limit // 2**20, "stopped" if watchdog.fired else "under")
        zygote = getattr(self, "_zygote", None)
        if zygote is not None:  # the kernel's leftovers killed, its files wiped
            self._zygote = None
            zygote.release()
        cgroup = getattr(self, "_cgroup", None)
        if cgroup is not None:  # after its tmpfs files are gone: nothing is left charged
            self._oom = cgroup.read_oom_kills() > 0 or getattr(self, "_oom", False)
            cgroup.close()
            self._cgroup = None
        scratch = getattr(self, "scratch", None)
        if scratch is not None and scratch.is_dir():
            shutil.rmtree(scratch, ignore_errors=True)

    def __del__(self):
        try:
            self._remove_scratch()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


# Seconds spent per phase in this process (a grading worker), read and reset per submission
# by autograder.grading.autograde when profiling (benchmarks/bench_grading.py --profile).
PROFILE: dict[str, float] = {}


@contextlib.contextmanager
def profiled(what: str):
    """Add the seconds the ``with`` block takes to ``PROFILE[what]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        PROFILE[what] = PROFILE.get(what, 0.0) + time.perf_counter() - start
