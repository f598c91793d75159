"""``check --warm``: the next check of a notebook served by a process kept ready for it.

A check spends most of its time before the first test: starting Python and the kernel,
importing the checker (and torch for ex05, three times: the kernel, the checker and ex05's
probe). ``python -m autograder check --warm NOTEBOOK`` runs the check as usual and then
starts a *host* (:mod:`autograder.check_host`) that has imported the checker and has the
next check's kernel (and ex05's probe) started, waiting. The next ``check --warm`` hands it
its command line, its folder and its standard output and error (the file descriptors
themselves, over a Unix socket), and prints nothing of its own: the host runs the check
exactly as the command would, writing to this terminal, and replies with the exit status.

The host serves only its own user (a socket in a folder only that user may enter) and
only a command whose *fingerprint* is its own: the same Python, the same environment, and
the same course package, instructor's sources and installed packages, by name, size and
time of change. On any other, it says so and exits, and the check runs as usual and
starts a new host. It exits
after :data:`autograder.env_vars.CHECK_IDLE` seconds without a check (default 900).

This module is the command's side: the standard library only, imported before anything
else (``autograder/__main__.py``). Nowhere but POSIX (no file descriptors over sockets on
Windows): there ``--warm`` changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder import env_vars

PACKAGE = Path(__file__).resolve().parent
# What the host reads once and keeps: the package and the instructor's sources. Not
# exercises/: in this repository the learner's notebook is a file there, and what the
# check reads of it is read again for each check (autograder.notebook._released).
COURSE_FILES = (PACKAGE, PACKAGE.parent / "solutions")
IDLE = 900.0  # seconds a host waits for the next check, when CHECK_IDLE is not set
VOLATILE = ("PWD", "OLDPWD", "_", "SHLVL")  # what a shell changes between two commands
WARM_FLAG = "--warm"
SOCKET_PATH = 100  # characters, below the limits of Linux (107) and macOS (103)
# The environment the command started with (this module is imported first): a host started
# after the check gets it, not what the check changed (cli.main puts bin/ first on PATH).
STARTED_WITH = dict(os.environ)


def idle_seconds() -> float:
    """How long a host waits for a check (``AUTOGRADER_CHECK_IDLE``, else :data:`IDLE`).

    Raises ValueError naming the value when it is not a number of seconds, 0 or more."""
    raw = env_vars.CHECK_IDLE.get()
    try:
        value = float(raw) if raw else IDLE
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"{env_vars.CHECK_IDLE} must be a number of seconds, 0 or more, "
                         f"not {raw!r}")
    return value


def folder() -> Path | None:
    """This user's folder of hosts' sockets, made when missing: under ``$XDG_RUNTIME_DIR``,
    else the temporary folder (where a socket's path fits :data:`SOCKET_PATH`). None where
    it is not this user's alone (mode 0700) or cannot be made: no host is used or started."""
    if os.name != "posix" or not hasattr(socket, "send_fds"):
        return None
    runtime = os.environ.get("XDG_RUNTIME_DIR") or ""
    bases = [Path(runtime)] if runtime and Path(runtime).is_dir() else []
    for base in [*bases, Path(tempfile.gettempdir())]:
        path = base / f"autograder-check-{os.getuid()}"
        if len(str(address(path))) <= SOCKET_PATH:
            break
    else:
        return None
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = path.lstat()
    except OSError:
        return None
    mine = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
    return path if mine and not st.st_mode & 0o077 else None


def address(where: Path) -> Path:
    """The socket of this Python's host in ``where`` (one host per interpreter and course)."""
    key = hashlib.sha256(f"{sys.executable}\0{PACKAGE}".encode()).hexdigest()[:16]
    return where / f"{key}.sock"


def host_pid(where: Path) -> int | None:
    """The process ID of the host of this Python in ``where`` (written in its lock file),
    or None when none has run there."""
    try:
        return int(address(where).with_suffix(".lock").read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None


def fingerprint() -> str:
    """What a host must share with a command it serves: this Python, the environment (less
    :data:`VOLATILE`), and the name, size and time of change of every file of
    :data:`COURSE_FILES` (the package, the instructor's sources) and of every folder on
    ``sys.path`` (packages installed or removed), but for the current folder its name only
    (a check writes its notebook there)."""
    h = hashlib.sha256(sys.executable.encode())
    env = sorted((k, v) for k, v in os.environ.items() if k not in VOLATILE)
    h.update(json.dumps(env).encode())  # ASCII: other characters escaped
    for top in COURSE_FILES:
        for root, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            for name in sorted(files):
                _stat_into(h, os.path.join(root, name))
    cwd = os.getcwd()
    for entry in sys.path:  # the folder of the command (-m's first entry): by its name only
        path = os.path.abspath(entry or ".")
        if path == cwd:
            h.update(os.fsencode(path) + b"\n")
        else:
            _stat_into(h, path)
    return h.hexdigest()


def _stat_into(h, path: str) -> None:
    name = os.fsencode(path)  # a folder's name need not be UTF-8
    try:
        st = os.stat(path)
    except OSError:
        h.update(name + b"\0-\n")
        return
    h.update(name + f"\0{st.st_size}\0{st.st_mtime_ns}\n".encode())


def wanted(argv: list[str]) -> bool:
    """Whether the command line ``argv`` (``sys.argv[1:]``) is a ``check ... --warm``."""
    return argv[:1] == ["check"] and WARM_FLAG in argv[1:]


def served(argv: list[str]) -> int | None:
    """The exit status of the check ``argv`` as a waiting host ran it, when one took it;
    None when none did (no host, another fingerprint, no ``--warm``): run it here then."""
    where = folder() if wanted(argv) else None
    if where is None:
        return None
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(str(address(where)))
    except OSError:
        return None
    with conn:
        try:
            return _ask(conn, argv)
        except (OSError, ValueError):  # nothing ran: the check runs here
            return None


def _ask(conn: socket.socket, argv: list[str]) -> int | None:
    """Hand the check to the host on ``conn``; relay an interrupt; its exit status."""
    out, err = sys.stdout, sys.stderr
    request = {"argv": argv, "cwd": os.getcwd(), "fingerprint": fingerprint(),
               "encoding": out.encoding, "errors": out.errors,
               "buffering": [[s.line_buffering, s.write_through] for s in (out, err)],
               "pwd": os.environ.get("PWD", "")}
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        socket.send_fds(conn, [json.dumps(request).encode() + b"\n"],
                        [sys.stdout.fileno(), sys.stderr.fileno()])
        replies = conn.makefile("r", encoding="utf-8")
        first = json.loads(replies.readline() or "{}")
    except (OSError, ValueError):
        return None
    except KeyboardInterrupt:  # waiting for the host's current check: nothing ran
        return 130
    if "pid" not in first:  # another fingerprint: the host has gone
        return None
    while True:
        try:
            last = replies.readline()
            break
        except KeyboardInterrupt:  # the host was started in a session of its own
            os.kill(first["pid"], signal.SIGINT)
    try:
        return int(json.loads(last)["code"])
    except (ValueError, KeyError, TypeError):
        print("error: the warm check process ended before the check did; check again",
              file=sys.stderr)
        return 2


def start_host(argv: list[str]) -> bool:
    """Start a host for the next ``check --warm`` like ``argv`` (``check ... NOTEBOOK``:
    its kernel is started for that notebook), in a session of its own, its output
    discarded, unless hosts are switched off (``AUTOGRADER_CHECK_IDLE=0``) or cannot be
    used here. Returns whether one was started."""
    where = folder()
    if where is None or idle_seconds() == 0:
        return False
    subprocess.Popen([sys.executable, "-m", "autograder.check_host", str(address(where)), *argv],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True, cwd=os.getcwd(),
                     env=STARTED_WITH)
    return True
