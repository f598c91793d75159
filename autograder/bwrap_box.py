"""The one place a bubblewrap (``bwrap``) command line is built (issue 24).

Every sandbox of the course, a grading kernel, the warm sandbox, the memory and
behaviour probes, rustc and a learner's Rust program, is described as data, a
:class:`Box`: its mounts in order, its working folder and its whole environment. Then
:func:`command` turns it into a command line with the isolation every sandbox gets:
its own namespaces for processes, network, IPC, hostname, user and cgroup
(``--unshare-all``), killed with its parent (``--die-with-parent``), no capabilities
(``--cap-drop ALL``) and an environment made only of what the box names
(``--clearenv``). No caller can leave one of those out. ``tests/test_bwrap_box.py``
checks the command lines as data, without starting bubblewrap.

bubblewrap applies the mounts in the order given. A ``--tmpfs /tmp`` placed before
the binds of the system still lets a Python environment under ``/tmp`` (a clone there,
as CI's may be) be seen read-only inside. A ``--remount-ro /`` placed after the binds
makes the root and everything mounted under it read-only.

Every sandbox is started in a session of its own (``start_new_session=True``) and stopped
with :func:`kill`, which kills its whole process group: bubblewrap's inner process as
well as the one started. Killed during its first milliseconds, before the inner process
has armed ``--die-with-parent``, the outer one would leave the inner one blocked for
ever, holding the pipes it was given (bubblewrap issue 633).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# The isolation every sandbox gets; command() puts it first, whatever the box says.
ISOLATION = ("--unshare-all", "--die-with-parent", "--cap-drop", "ALL")
# /proc and /dev of the sandbox's own (process namespace, a minimal device list).
PROC_AND_DEV = ("--proc", "/proc", "--dev", "/dev")


@dataclass(frozen=True)
class Box:
    """One sandbox, as data.

    - ``mounts``: bubblewrap's mount arguments, in the order applied (build them with
      :func:`ro_bind`, :func:`bind`, :func:`tmpfs` and :func:`remount_ro`, or take them
      from :func:`autograder.sandbox.system_binds`).
    - ``chdir``: the working folder inside.
    - ``env``: the process's whole environment (nothing else is passed in).
    - ``proc_and_dev``: give it its own ``/proc`` and a minimal ``/dev`` (a Rust
      program, which needs neither, runs without).
    - ``as_pid_1``: the command itself is PID 1 (the warm sandbox reaps its forks).
    - ``new_session``: a new terminal session (``setsid``): the process cannot push
      input into the terminal of the one that started it.
    """

    mounts: tuple[str, ...] = ()
    chdir: str = "/"
    env: Mapping[str, str] = field(default_factory=dict)
    proc_and_dev: bool = True
    as_pid_1: bool = False
    new_session: bool = False


def command(bwrap: str, box: Box, argv: Sequence[str]) -> list[str]:
    """The command line that runs ``argv`` inside ``box``, with bubblewrap at ``bwrap``.

    Raises ValueError when ``argv`` is empty, when an environment variable's name is
    empty or holds ``=``, or when ``chdir`` is not an absolute path.
    """
    if not argv:
        raise ValueError("a sandbox needs a command to run; argv is empty")
    if not box.chdir.startswith("/"):
        raise ValueError(f"the sandbox's working folder must be absolute, not {box.chdir!r}")
    line = [bwrap, *ISOLATION]
    if box.as_pid_1:
        line.append("--as-pid-1")
    if box.new_session:
        line.append("--new-session")
    if box.proc_and_dev:
        line += PROC_AND_DEV
    line += box.mounts
    line += ["--chdir", box.chdir, "--clearenv"]
    for name, value in box.env.items():
        if not name or "=" in name:
            raise ValueError(f"not an environment variable's name: {name!r}")
        line += ["--setenv", name, str(value)]
    return [*line, "--", *argv]


def ro_bind(source: str, dest: str | None = None) -> list[str]:
    """``source`` mounted read-only at ``dest`` (its own path by default)."""
    return ["--ro-bind", str(source), str(dest or source)]


def bind(source: str, dest: str | None = None) -> list[str]:
    """``source`` mounted writable at ``dest`` (its own path by default)."""
    return ["--bind", str(source), str(dest or source)]


def tmpfs(path: str, size: Sequence[str] = ()) -> list[str]:
    """An empty tmpfs at ``path``; ``size`` is bubblewrap's ``["--size", N]`` or nothing."""
    return [*size, "--tmpfs", path]


def dev_bind_try(path: str) -> list[str]:
    """The host's device ``path`` (a GPU's), where it exists."""
    return ["--dev-bind-try", path, path]


def remount_ro(path: str = "/") -> list[str]:
    """``path`` and every mount under it read-only from here on."""
    return ["--remount-ro", path]


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL to a sandbox started with ``start_new_session=True``: to every process of its
    group (bubblewrap's inner process, whether or not it has armed ``--die-with-parent``),
    then to the process itself if it still runs. Does not wait for it: the caller reaps
    it (``wait`` or ``communicate``). Nothing is sent once it has been reaped (its process
    id, and so its group's, may then be another's). Never raises for a process gone."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # not reaped: the id is still its own
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
