"""The kernel ``python -m autograder check`` runs a learner's notebook in, started first.

The check waits for this kernel (Python, ipykernel and IPython: about half a second) more
than for anything else, so :func:`launch` starts it before the command imports nbformat,
nbclient or the trusted checker, which then load while the kernel boots; this module
imports jupyter_client only. Earlier still, before jupyter_client is imported (0.2 s),
:mod:`autograder.check_early` starts the same kernel with the standard library, and
:func:`launch` adopts it. :func:`stop` kills the kernel once the notebook has run.

The kernel is ipykernel as the ``python3`` kernel starts it, on the interpreter running the
check, less two things a check never uses: its debugger (debugpy and pydevd, about 60 ms of
imports; the kernel then tells a front end it has none) and its history file (nbclient
keeps history in memory too). Stopping it waits for the killed process in steps of 5 ms,
not jupyter_client's 100 ms.

On Linux and macOS the kernel talks over Unix sockets (ZMQ's ``ipc`` transport) in a folder
of its own, as grading's kernels do: over TCP, jupyter_client picks free ports, closes them
and hands them to the kernel, and another process starting at the same moment can take one
first (jupyter_client issue 154; a CI failure of this course), so the kernel exits with
"Address already in use". Where TCP remains (Windows, or a temporary folder whose path is
too long for a socket) and for any other death before the kernel answers,
:func:`ready_client` starts a fresh kernel: no learner's code has run then.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from traitlets import default

from autograder.check_early import LAUNCH, EarlyKernel, kernel_arguments, socket_folder
from autograder.kernel_ready import ReadyClient

STARTS = 3  # kernels started, in all, before the check gives up (:func:`ready_client`)


class KernelStartError(RuntimeError):
    """No kernel answered: each of :data:`STARTS` kernels died, or one did not answer
    within the start-up time. The message says which, for the learner."""


class CheckKernelManager(AsyncKernelManager):
    """jupyter_client's kernel manager, starting :data:`autograder.check_early.LAUNCH` and stopping promptly;
    ``started_in`` holds :func:`launch`'s arguments, so that a kernel that died before it
    answered can be started again (:func:`ready_client`)."""

    started_in: tuple[Path, tuple[str, ...]] = (Path("."), ())
    sockets: Path | None = None  # the folder of its ipc sockets and connection file

    _early: EarlyKernel | None = None  # the kernel to adopt instead of starting one

    @default("client_factory")
    def _client_factory_default(self):
        return ReadyClient  # ready when the kernel answers: no 0.2 s wait for silence

    def use_unix_sockets(self, folder: Path | None = None) -> None:
        """Talk over ``ipc`` sockets in ``folder`` or a new temporary one, where Unix
        sockets exist and the folder's path is short enough for them; else stay on TCP."""
        folder = folder or socket_folder()
        if folder is None:
            return
        self.sockets, self.transport = folder, "ipc"
        self.ip, self.connection_file = str(folder / "kernel"), str(folder / "kernel.json")

    def adopt(self, early: EarlyKernel) -> None:
        """Take the kernel :func:`autograder.check_early.start` started, with its
        connection file, instead of starting one."""
        self.use_unix_sockets(early.sockets)
        self.load_connection_file()
        self._connection_file_written = True  # not rewritten: the kernel has read it
        self._early = early

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        """``python -c <launcher> -f <connection file> <extra arguments>``."""
        return [sys.executable, "-c", LAUNCH, "-f", self.connection_file,
                *(extra_arguments or [])]

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        early, self._early = self._early, None
        if early is None:
            await super()._async_launch_kernel(kernel_cmd, **kw)
            return
        prov = self.provisioner  # what jupyter_client's LocalProvisioner.launch_kernel sets
        prov.process, prov.pid, prov.cwd = early.proc, early.proc.pid, kw.get("cwd")
        prov.pgid = os.getpgid(early.proc.pid) if early.proc.poll() is None else None
        self._reconcile_connection_info(prov.connection_info)

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        # The killed kernel is gone within milliseconds; the default step adds 100 ms to
        # every check.
        await super()._async_wait(pollinterval=min(pollinterval, 0.005))

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if self.sockets is not None and not restart:
            shutil.rmtree(self.sockets, ignore_errors=True)

    # nbclient cleans up a kernel that died with ``cleanup_resources``, which
    # AsyncKernelManager binds to the base class's coroutine, not to this override.
    cleanup_resources = _async_cleanup_resources


def launch(cwd: Path, preload: tuple[str, ...] = (),
           early: EarlyKernel | None = None) -> CheckKernelManager:
    """Start a kernel in the folder ``cwd`` without waiting for it to be ready; it imports
    the modules ``preload`` names (bound to no name: torch for the exercises whose checks
    use it) as it starts. ``early``: the kernel :mod:`autograder.check_early` started for
    this command, taken when it runs in ``cwd`` and has imported ``preload`` (else
    discarded). Hand it
    to :func:`autograder.notebook_run.execute` as ``kernel``; :func:`stop` it when done.

    Raises what jupyter_client raises when no kernel can be started (no ipykernel).
    """
    km = CheckKernelManager(kernel_name="python3")
    cwd = Path(cwd).resolve()
    if early is not None and early.runs_in(cwd) and set(preload) <= set(early.preload):
        km.adopt(early)
    else:
        if early is not None:
            early.discard()
        km.use_unix_sockets()
    km.started_in = (cwd, tuple(preload))
    run_sync(km.start_kernel)(extra_arguments=kernel_arguments(tuple(preload)), cwd=str(cwd))
    return km


def ready_client(make_client, km: CheckKernelManager):
    """``make_client(km)`` (an nbclient client whose ``km`` is ``km``) once the kernel has
    answered; when the kernel died first, a fresh kernel (on fresh sockets), up to
    :data:`STARTS` kernels in all.

    Raises :class:`KernelStartError` when none answered.
    """
    for start in range(1, STARTS + 1):
        client = make_client(km)
        try:
            client.start_new_kernel_client()  # waits for the kernel's kernel_info reply
            return client
        except TimeoutError as exc:
            stop(km)
            raise KernelStartError(f"the Python kernel did not answer within "
                                   f"{client.startup_timeout} s ({exc})") from exc
        except RuntimeError as exc:  # "Kernel died before replying to kernel_info"
            stop(km)
            died = exc
            if start < STARTS:
                km = launch(*km.started_in)
    raise KernelStartError(f"the Python kernel died as it started, {STARTS} times ({died}); "
                           f"run `python -m ipykernel` to see why") from died


def stop(km: CheckKernelManager) -> None:
    """Kill the kernel ``km`` started, if it still runs (the notebook runner stops it at the
    end of a run; this is for a check that ended before)."""
    if km.has_kernel:
        run_sync(km.shutdown_kernel)(now=True)
