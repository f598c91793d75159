"""``python -m autograder check``'s kernel, started before the command imports anything else.

The check waits for its kernel (Python, ipykernel and IPython: about 0.6 s) more than for
anything else, and importing jupyter_client, which starts kernels, takes 0.2 s more. So
``autograder/__main__.py`` hands the command line to :func:`start` first: for ``check``, it
starts the kernel itself, with the standard library, exactly as
:func:`autograder.check_kernel.launch` would (the same command, connection file, ``ipc``
sockets in a folder of its own, environment and new session), and
:func:`autograder.check_kernel.launch` adopts it. For any other command, or a command line
it cannot read, nothing is started and ``check`` starts its kernel as before.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from autograder.exercises import assignment_of_path
from autograder.scratch import scratch_dir
from autograder.warm_sandbox import ahead_of_use, preload_for

_SOCKET_PATH = 100  # characters, below macOS's limit (104) for a Unix socket's path

# ipykernel's launcher, with debugpy unimportable: ipykernel.debugger then sets
# _is_debugpy_available = False instead of importing it.
LAUNCH = ("import sys; sys.modules['debugpy'] = None; sys.argv[0] = 'ipykernel_launcher'; "
          "from ipykernel.kernelapp import launch_new_instance; launch_new_instance()")


def kernel_arguments(preload: tuple[str, ...]) -> list[str]:
    """ipykernel's options after ``-f FILE``: quiet, history in memory, and an import of
    each module of ``preload`` bound to no name (torch, for the checks that use it)."""
    return ["--log-level=ERROR", "--HistoryManager.hist_file=:memory:"] + [
        f"--IPKernelApp.exec_lines=__import__({name!r}) and None" for name in preload]


def socket_folder() -> Path | None:
    """A new folder for a kernel's ``ipc`` sockets and connection file, where Unix sockets
    exist and its path is short enough for them; else None (TCP)."""
    if os.name != "posix":
        return None
    folder = scratch_dir("autograder-check-kernel-")  # a killed check's is swept later
    if len(str(folder / "kernel-65535")) > _SOCKET_PATH:
        folder.rmdir()
        return None
    return folder


@dataclass
class EarlyKernel:
    """A kernel started by :func:`start`: its process, the folder of its sockets and
    connection file, the folder it runs in and the modules it imports as it starts."""

    proc: subprocess.Popen
    sockets: Path
    cwd: Path
    preload: tuple[str, ...]
    cwd_id: tuple[int, int] = (0, 0)  # the folder's device and inode when it started
    output: tuple[int, int] | None = None  # its stdout and stderr pipes' read ends (ahead)

    @property
    def connection_file(self) -> Path:
        return self.sockets / "kernel.json"

    def runs_in(self, cwd: Path) -> bool:
        """Whether the kernel's working folder is ``cwd`` still (not a folder of that name
        made since: a kernel started ahead, by ``check --warm``'s host, would run in a
        removed folder)."""
        try:
            st = cwd.stat()
        except OSError:
            return False
        return self.cwd == cwd and (st.st_dev, st.st_ino) == self.cwd_id

    def discard(self) -> None:
        """Kill the kernel and remove its folder (a check that did not take it)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for p in self.sockets.iterdir():
            p.unlink(missing_ok=True)
        self.sockets.rmdir()


def notebook_of(argv: list[str]) -> Path | None:
    """The notebook of a ``check [--timeout N] [--visible-only] [--warm] NOTEBOOK`` command line
    (``sys.argv[1:]``); None for another command or a line argparse would refuse."""
    if argv[:1] != ["check"]:
        return None
    rest, found = argv[1:], []
    while rest:
        word = rest.pop(0)
        if word == "--timeout" and rest and rest[0].isdigit():
            rest.pop(0)
        elif word.startswith("--timeout=") or word in ("--visible-only", "--warm"):
            continue
        elif word.startswith("-"):
            return None  # --help, a typo: argparse answers, no kernel is needed
        else:
            found.append(word)
    return Path(found[0]) if len(found) == 1 else None


def start(argv: list[str], ahead: bool = False) -> EarlyKernel | None:
    """The kernel for ``python -m autograder`` ``argv``, started now when the command is a
    check of a notebook file; else None. ``ahead``: for a check still to come (``check
    --warm``'s host), importing what torch imports on first use too
    (:func:`autograder.warm_sandbox.ahead_of_use`), writing into pipes (``output``: the
    check that takes it relays them, :mod:`autograder.kernel_output`). Never raises: the
    check starts its own then."""
    path = notebook_of(argv)
    try:
        if path is None or not path.is_file():
            return None
        named = assignment_of_path(path)
        preload = preload_for(named) if named else ()
        preload = ahead_of_use(preload) if ahead else preload
        sockets = socket_folder()
        if sockets is None:
            return None
        cwd = path.resolve().parent
        st = cwd.stat()
        pipes = (os.pipe(), os.pipe()) if ahead else None
        try:
            proc = _popen(sockets, cwd, preload, [w for _, w in pipes] if pipes else None)
        finally:
            for _, w in pipes or ():
                os.close(w)
        return EarlyKernel(proc, sockets, cwd, preload, (st.st_dev, st.st_ino),
                           tuple(r for r, _ in pipes) if pipes else None)
    except Exception:  # noqa: BLE001 - see the docstring
        return None


def _popen(sockets: Path, cwd: Path, preload: tuple[str, ...],
           output: list[int] | None = None) -> subprocess.Popen:
    """The kernel's process, as jupyter_client's ``launch_kernel`` starts it: a new
    session, stdin closed, ``JPY_PARENT_PID`` (the kernel exits when this process does);
    its stdout and stderr this command's, or the descriptors ``output``."""
    info = {"shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4,
            "hb_port": 5, "ip": str(sockets / "kernel"), "key": secrets.token_hex(16),
            "transport": "ipc", "signature_scheme": "hmac-sha256", "kernel_name": "python3"}
    connection = sockets / "kernel.json"
    connection.write_text(json.dumps(info, indent=2), encoding="utf-8")
    connection.chmod(0o600)
    env = dict(os.environ, JPY_PARENT_PID=str(os.getpid()))
    out, err = output or (None, None)
    return subprocess.Popen([sys.executable, "-c", LAUNCH, "-f", str(connection),
                             *kernel_arguments(preload)], stdin=subprocess.DEVNULL,
                            stdout=out, stderr=err, cwd=cwd, env=env, start_new_session=True)
