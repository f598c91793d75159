"""A kernel client that is ready as soon as the kernel has answered.

jupyter_client's ``wait_for_ready`` asks for ``kernel_info`` until the kernel replies and
hears from IOPub, then waits for 0.2 s of silence on IOPub, to drop the status messages of
its own request. Nothing here needs them dropped: nbclient (the notebook's cells) and the
checker (its tests) read only the IOPub messages of their own requests. Grading's kernels
(:mod:`autograder.sandboxed_kernel`) and ``check``'s (:mod:`autograder.check_kernel`) use
:class:`ReadyClient`: 0.2 s less of every check, and of every graded notebook.
"""

from __future__ import annotations

import queue
import time

from jupyter_client.asynchronous import AsyncKernelClient


class ReadyClient(AsyncKernelClient):
    """jupyter_client's asynchronous client, less the 0.2 s of silence on IOPub it waits for
    once the kernel answered (see the module docstring)."""

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        """Ask for ``kernel_info`` until the kernel replies and IOPub has a message.

        Raises RuntimeError when the kernel dies first, or after ``timeout`` seconds."""
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
