"""Grading kernels in a sandbox built with bubblewrap (``bwrap``, Debian package ``bubblewrap``).

Each kernel that grades a submission runs inside ``bwrap`` (the sandbox Flatpak uses) with:

- its own namespaces for processes, network, IPC and hostname (``--unshare-all``): no
  network at all, and killing the sandbox kills everything the learner's code started
  (``--die-with-parent``, the sandbox's init is PID 1 of its namespace);
- a root file system that shows only what a kernel needs, read-only: ``/usr``, ``/etc``,
  the Python installation and the virtual environment; a fresh ``/tmp`` and ``$HOME``;
- a writable *scratch copy* of the submission's folder, mounted where the folder is, so
  relative paths work and nothing the learner writes reaches the real one;
- a private copy of the course's Python package, which :mod:`autograder.kernel_guard`
  loads into the kernel and then deletes before any learner code runs: the reference
  implementations, the checks and ``solutions/`` are never readable from learner code.

The course folder, ``solutions/``, the gradebook, the workspace, other submissions and the
home folder are not mounted. The kernel talks to nbclient over Jupyter's ``ipc`` transport
(Unix sockets in a folder bound into the sandbox at its own path), since it has no network, and reports
what its guard found through a named pipe in the same folder (:meth:`drain_channel`).
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

PACKAGE = Path(__file__).resolve().parent
COURSE_DIR = "/opt/autograder-course"  # inside the sandbox: the package, deleted at start
CHANNEL = "channel"
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
                               "--dev", "/dev", "--tmpfs", "/tmp", *_system_binds(),
                               sys.executable, "-c", "print('ok')"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap could not run: {exc}"
    if done.returncode != 0 or done.stdout.strip() != "ok":
        return f"bwrap could not start a sandbox: {(done.stderr or done.stdout).strip()[:300]}"
    return None


def _system_binds() -> list[str]:
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
        from autograder.rust import find_rustc
    except ImportError:
        return None
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


def _copy_course(dest: Path) -> None:
    """The Python package the kernel needs (not the grader, not bytecode caches)."""
    shutil.copytree(PACKAGE, dest / "autograder", ignore=shutil.ignore_patterns(
        "__pycache__", "grading", "cli.py", "__main__.py", "*.pyc", "target"))


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc/PID/task/*/children), parents first."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                with open(f"/proc/{p}/task/{t}/children", encoding="ascii") as f:
                    kids = [int(x) for x in f.read().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels run in a bubblewrap sandbox (see the module docstring).

    nbclient creates one per notebook; the kernel's working folder (nbclient's ``cwd``,
    the submission's folder) is copied to a scratch folder that is mounted in its place.
    ``exposed`` (a set of module names) lists the course modules the notebook's locked
    cells import and that learner code may therefore use; ``assignment`` names the checks
    to preload.
    """

    assignment: str = ""
    exposed: tuple[str, ...] = ()

    async def _async_pre_start_kernel(self, **kw):
        error = sandbox_error()
        if error:
            raise RuntimeError(f"no sandbox for the grading kernel: {error}")
        self.scratch = Path(tempfile.mkdtemp(prefix="autograder-kernel-"))
        run = self.scratch / "run"
        run.mkdir()
        os.mkfifo(run / CHANNEL, 0o600)
        # Opened now, non-blocking: the kernel's guard opens the write end when it starts.
        self._channel = os.open(run / CHANNEL, os.O_RDONLY | os.O_NONBLOCK)
        self._channel_buffer = b""
        self.transport = "ipc"
        self.ip = str(run / "kernel")
        self.connection_file = str(run / "kernel.json")
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        return self._wrap(cmd, kw), kw

    def _wrap(self, cmd: list[str], kw: dict) -> list[str]:
        cwd = Path(kw.get("cwd") or os.getcwd()).resolve()
        work = self.scratch / "work"
        shutil.copytree(cwd, work, symlinks=True)
        _copy_course(self.scratch / "course")
        env = kw.get("env") or dict(os.environ)
        kept = {k: v for k, v in env.items() if k in KEEP_ENV}
        run = self.scratch / "run"  # mounted at the same path: the connection file names it
        kept.update(HOME="/tmp", MPLCONFIGDIR="/tmp/matplotlib", PYTHONPATH=COURSE_DIR,
                    PYTHONDONTWRITEBYTECODE="1", JUPYTER_RUNTIME_DIR=str(run),
                    IPYTHONDIR="/tmp/ipython", AUTOGRADER_ASSIGNMENT=self.assignment,
                    AUTOGRADER_EXPOSED=",".join(self.exposed),
                    AUTOGRADER_CHANNEL=str(run / CHANNEL),
                    AUTOGRADER_COURSE_DIR=COURSE_DIR)
        if _rust_sysroot():
            kept["RUSTC"] = str(Path(_rust_sysroot(), "bin", "rustc"))
        kw["env"] = kept
        # Our launcher instead of ipykernel's; its arguments (-f FILE ...) stay.
        inner = [sys.executable, "-m", "autograder.kernel_guard"]
        args = cmd[1:]
        if "-m" in args:  # python -m ipykernel_launcher -f FILE ...
            args = args[args.index("-m") + 2:]
        # bwrap applies mounts in order: the empty /tmp comes before the binds, so that a
        # course (and its .venv) cloned under /tmp is still visible, read-only, inside.
        box = [bwrap(), "--unshare-all", "--die-with-parent", "--cap-drop", "ALL",
               "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm", "--tmpfs", "/tmp",
               *_system_binds(),
               "--bind", str(run), str(run),
               "--bind", str(self.scratch / "course"), COURSE_DIR,
               "--bind", str(work), str(cwd), "--chdir", str(cwd), "--clearenv"]
        for k, v in kept.items():
            box += ["--setenv", k, v]
        return [*box, "--", *inner, *args]

    async def interrupt_kernel(self) -> None:
        """SIGINT to the processes inside the sandbox, not to bwrap itself (which would die
        and take the kernel with it): the learner's cell gets a KeyboardInterrupt."""
        proc = getattr(self.provisioner, "process", None) if self.provisioner else None
        if proc is None:
            return
        for pid in _descendants(proc.pid):
            try:
                with open(f"/proc/{pid}/comm", encoding="ascii") as f:
                    if f.read().strip() == "bwrap":
                        continue
                os.kill(pid, signal.SIGINT)
            except OSError:
                pass

    def drain_channel(self) -> list[str]:
        """Lines the kernel's guard has written so far (what it found), without waiting."""
        if getattr(self, "_channel", None) is None:
            return []
        chunks = []
        while True:
            try:
                data = os.read(self._channel, 65536)
            except BlockingIOError:
                break
            if not data:
                break
            chunks.append(data)
        text = self._channel_buffer + b"".join(chunks)
        *lines, self._channel_buffer = text.split(b"\n")
        return [ln.decode("utf-8", "replace") for ln in lines]

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            self._remove_scratch()

    def _remove_scratch(self) -> None:
        if getattr(self, "_channel", None) is not None:
            os.close(self._channel)
            self._channel = None
        scratch = getattr(self, "scratch", None)
        if scratch is not None and scratch.is_dir():
            shutil.rmtree(scratch, ignore_errors=True)

    def __del__(self):
        try:
            self._remove_scratch()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def exposed_modules(nb) -> tuple[str, ...]:
    """Course modules the notebook's locked (instructor's) code cells import."""
    import ast

    found = set()
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("locked") or meta.get("solution"):
            continue
        lines = cell.source.splitlines()
        found |= {ln.split()[1] for ln in lines if ln.strip().startswith("%load_ext ")
                  and len(ln.split()) > 1 and ln.split()[1].startswith("autograder")}
        try:
            tree = ast.parse("\n".join(ln for ln in lines
                                       if not ln.lstrip().startswith(("%", "!"))))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("autograder")}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "autograder"):
                found.add(node.module)
                found |= {f"{node.module}.{a.name}" for a in node.names
                          if node.module in ("autograder.reference", "autograder.checks")}
    return tuple(sorted(found))


def _guarded_execute_class():
    from nbgrader.utils import is_grade, is_solution

    from autograder.nbgrader_plugins import ResilientExecute, _error

    class GuardedExecute(ResilientExecute):
        """nbgrader's Execute (via ResilientExecute) with the kernel in the sandbox.

        After each cell it reads what the kernel's guard (:mod:`autograder.kernel_guard`)
        reported. From the first report on, every graded test cell gets an error output
        ``TamperingDetected: <what was found>``, so it scores 0 and the submission gets the
        status ``tampering``; the tests that ran before keep their points.
        """

        def create_kernel_manager(self):
            self.kernel_manager_class = SandboxedKernelManager
            km = super().create_kernel_manager()
            km.assignment = self.resources.get("nbgrader", {}).get("assignment", "") or ""
            km.exposed = exposed_modules(self.nb)
            self.km = km
            return km

        def preprocess(self, nb, resources, km=None):
            self._found: list[str] = []
            return super().preprocess(nb, resources, km=km)

        def preprocess_cell(self, cell, resources, index):
            cell, resources = super().preprocess_cell(cell, resources, index)
            km = getattr(self, "km", None)
            if cell.cell_type == "code" and isinstance(km, SandboxedKernelManager):
                failed = False
                for line in km.drain_channel():
                    if line.startswith("violation\t"):
                        self._found.append(line.split("\t", 1)[1])
                    elif line == "cell\tfailed":  # the cell's code raised (the guard's exec)
                        failed = True
                if failed and is_grade(cell) and not is_solution(cell) and not any(
                        o.get("output_type") == "error" for o in cell.outputs):
                    self._found.append(f"{cell.metadata['nbgrader'].get('grade_id')} raised "
                                       "an exception, but its error never arrived (hidden)")
                if self._found and is_grade(cell) and not is_solution(cell):
                    cell.outputs.append(_error(TAMPERING_ERROR, "; ".join(
                        dict.fromkeys(self._found))[:2000]))
            return cell, self.resources

    return GuardedExecute


TAMPERING_ERROR = "TamperingDetected"


def __getattr__(name):  # nbgrader imports the preprocessor by name; build it on demand
    if name == "GuardedExecute":
        cls = _guarded_execute_class()
        globals()["GuardedExecute"] = cls
        return cls
    raise AttributeError(name)
