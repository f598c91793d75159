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

This module holds the sandbox's rules (bubblewrap found, the system binds, the course files
a kernel gets) and what the kernel managers share; the warm sandbox that forks kernels is
:mod:`autograder.warm_sandbox`, the kernel manager nbclient uses is
:mod:`autograder.sandboxed_kernel`.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from autograder import bwrap_box, env_vars, kernel_memory
from autograder.memory import child_pids
from autograder.rust_source import find_rustc

PACKAGE = Path(__file__).resolve().parent
COURSE_DIR = "/opt/autograder-course"  # inside the sandbox: the package's public files
# Environment variables a kernel keeps; everything else (tokens, paths) is dropped.
KEEP_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONUTF8", "PYTHONIOENCODING",
            "MPLBACKEND", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
            "PYTHONHASHSEED", "JPY_PARENT_PID", "CUDA_VISIBLE_DEVICES", "TZ")


def bwrap() -> str | None:
    """Path of the ``bwrap`` executable (``$AUTOGRADER_BWRAP`` if set), None when missing."""
    return shutil.which(env_vars.BWRAP.get() or "bwrap")


@functools.lru_cache(maxsize=None)
def sandbox_error() -> str | None:
    """Why no sandbox can start on this machine, or None when one can."""
    exe = bwrap()
    if exe is None:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    try:
        # The tmpfs first: binds after it stay visible when Python lives under /tmp.
        box = bwrap_box.Box(mounts=(*bwrap_box.tmpfs("/tmp"), *system_binds()),
                            env={"PATH": "/usr/bin:/bin"})
        done = subprocess.run(bwrap_box.command(exe, box, [sys.executable, "-c", "print('ok')"]),
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


def scratch_tmpfs() -> list[str]:
    """The sandbox's ``/dev/shm`` and ``/tmp``: tmpfs mounts of at most the memory cap each
    (:mod:`autograder.kernel_memory`)."""
    size = tmpfs_size_args()
    return [*bwrap_box.tmpfs("/dev/shm", size), *bwrap_box.tmpfs("/tmp", size)]


def system_binds(gpu: bool = True) -> list[str]:
    """Read-only binds of the operating system and the Python that runs the kernel, and
    the GPU's devices where there are some (``gpu=False``: none, as for the memory probe,
    since GPU memory is in no cgroup)."""
    args = []
    for top in ("/usr", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin"):
        p = Path(top)
        if p.is_symlink():  # merged /usr: /bin -> usr/bin
            args += ["--symlink", os.readlink(p), top]
        elif p.is_dir():
            args += bwrap_box.ro_bind(top)
    roots = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(),
             Path(sys.executable).resolve().parent.parent}
    sysroot = rust_sysroot()  # the Rust exercise compiles learner cells in the kernel
    if sysroot:
        roots.add(Path(sysroot))
    for extra in env_vars.SANDBOX_RO.get().split(os.pathsep):
        if extra:
            roots.add(Path(extra).resolve())
    usr = Path("/usr")
    for root in sorted(roots):
        if not (root == usr or usr in root.parents) and root.is_dir():
            args += bwrap_box.ro_bind(str(root))
    for dev in sorted(Path("/dev").glob("nvidia*")) + [Path("/dev/dri")]:
        if gpu and dev.exists():
            args += bwrap_box.dev_bind_try(str(dev))
    return args


def kernel_env(source: Mapping[str, str], **extra: str) -> dict[str, str]:
    """A kernel's whole environment: the variables of ``source`` named in
    :data:`KEEP_ENV`, a home, caches and the course in the sandbox, and ``extra``."""
    env = {k: v for k, v in source.items() if k in KEEP_ENV}
    env.update(HOME="/tmp", MPLCONFIGDIR="/tmp/matplotlib", PYTHONPATH=COURSE_DIR,
               PYTHONDONTWRITEBYTECODE="1", IPYTHONDIR="/tmp/ipython", **extra)
    return env


def kernel_box(run: Path, course: Path, work: Path, workdir: str, env: Mapping[str, str],
               shared: bool = False) -> bwrap_box.Box:
    """The sandbox of a grading kernel: the system read-only, its own ``/tmp`` and
    ``/dev/shm`` (at most the memory cap each), two writable folders: ``run`` (the
    connection file and sockets, at its own path) and ``work`` (at ``workdir``, the
    working folder), and ``course`` read-only (at :data:`COURSE_DIR`: a kernel that
    rewrote the course's files would reach the next kernel of a warm sandbox).

    ``shared``: the warm sandbox, which kernels use one after another. Its root and
    ``/dev`` are read-only (nothing writable but the folders wiped between kernels) and
    its command is PID 1 (it reaps the kernels it forks).
    """
    mounts = (*scratch_tmpfs(), *system_binds(), *bwrap_box.bind(str(run)),
              *bwrap_box.ro_bind(str(course), COURSE_DIR), *bwrap_box.bind(str(work), workdir))
    if shared:
        mounts += (*bwrap_box.remount_ro("/"), *bwrap_box.remount_ro("/dev"))
    return bwrap_box.Box(mounts=mounts, chdir=workdir, env=env, as_pid_1=shared)


@functools.lru_cache(maxsize=None)
def rust_sysroot() -> str | None:
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
KERNEL_FILES = ("__init__.py", "config.py", "env_vars.py", "exercises.py", "testing.py",
                "check_failure.py", "closeness.py", "python_only.py", "verdicts.py", "check_report.py", "wire.py",
                "wire_folder.py", "wire_tensor.py",
                "kernel_client.py", "kernel_modules.py", "kernel_launch.py", "kernel_zygote.py", "wipe.py", "rust.py",
                "rust_source.py", "rust_glue.py", "rust_ffi.py",
                "in_notebook.py", "brief_tracebacks.py")
# What an exercise's released notebook imports beyond those (the helpers it gives).
KERNEL_EXTRA = {"ex07_transformer": ("transformer_given.py",)}


def copy_course(dest: Path, assignment: str | None = None) -> None:
    """The part of the Python package the kernel gets: :data:`KERNEL_FILES` and
    ``assignment``'s :data:`KERNEL_EXTRA` (None: the warm sandbox's own start)."""
    (dest / "autograder").mkdir(parents=True, exist_ok=True)
    for name in KERNEL_FILES + KERNEL_EXTRA.get(assignment or "", ()):
        shutil.copyfile(PACKAGE / name, dest / "autograder" / name)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc/PID/task/*/children), parents first."""
    out, todo = [], [pid]
    while todo:
        kids = child_pids(todo.pop(0))
        out += kids
        todo += kids
    return out


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


