"""The kernel ``python -m autograder check`` runs a learner's notebook in, started first.

The check waits for this kernel (Python, ipykernel and IPython: about half a second) more
than for anything else, so :func:`launch` starts it before the command imports nbformat,
nbclient or the trusted checker, which then load while the kernel boots; this module
imports jupyter_client only. :func:`stop` kills the kernel once the notebook has run.

The kernel is ipykernel as the ``python3`` kernel starts it, on the interpreter running the
check, less two things a check never uses: its debugger (debugpy and pydevd, about 60 ms of
imports; the kernel then tells a front end it has none) and its history file (nbclient
keeps history in memory too). Stopping it waits for the killed process in steps of 5 ms,
not jupyter_client's 100 ms.
"""

from __future__ import annotations

import sys
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync

# ipykernel's launcher, with debugpy unimportable: ipykernel.debugger then sets
# _is_debugpy_available = False instead of importing it.
_LAUNCH = ("import sys; sys.modules['debugpy'] = None; sys.argv[0] = 'ipykernel_launcher'; "
           "from ipykernel.kernelapp import launch_new_instance; launch_new_instance()")


class CheckKernelManager(AsyncKernelManager):
    """jupyter_client's kernel manager, starting :data:`_LAUNCH` and stopping promptly."""

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        """``python -c <launcher> -f <connection file> <extra arguments>``."""
        return [sys.executable, "-c", _LAUNCH, "-f", self.connection_file,
                *(extra_arguments or [])]

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        # The killed kernel is gone within milliseconds; the default step adds 100 ms to
        # every check.
        await super()._async_wait(pollinterval=min(pollinterval, 0.005))


def launch(cwd: Path, preload: tuple[str, ...] = ()) -> CheckKernelManager:
    """Start a kernel in the folder ``cwd`` without waiting for it to be ready; it imports
    the modules ``preload`` names (bound to no name: torch for the exercises whose checks
    use it) as it starts. Hand it to :func:`autograder.notebook_run.execute` as
    ``kernel``; :func:`stop` it when done.

    Raises what jupyter_client raises when no kernel can be started (no ipykernel).
    """
    km = CheckKernelManager(kernel_name="python3")
    arguments = ["--log-level=ERROR", "--HistoryManager.hist_file=:memory:"] + [
        f"--IPKernelApp.exec_lines=__import__({name!r}) and None" for name in preload]
    run_sync(km.start_kernel)(extra_arguments=arguments, cwd=str(Path(cwd).resolve()))
    return km


def stop(km: CheckKernelManager) -> None:
    """Kill the kernel ``km`` started, if it still runs (the notebook runner stops it at the
    end of a run; this is for a check that ended before)."""
    if km.has_kernel:
        run_sync(km.shutdown_kernel)(now=True)
