"""Start a grading kernel in the sandbox: ``python -m autograder.kernel_launch -f FILE``.

Started by :class:`autograder.sandboxed_kernel.SandboxedKernelManager` inside bubblewrap
(or run as ``__main__`` in a process forked by :mod:`autograder.kernel_zygote`), it starts ipykernel
and nothing else. The kernel holds the learner's code, the helpers the released notebook
imports and the thin client (:mod:`autograder.kernel_client`): the hidden checks, the
references and the answers run in the trusted checker outside it (:mod:`autograder.checker`;
the contract's "The judge outside the judged"), so there is nothing in it to guard.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    # The process's own standard streams are the grader's (a worker's log file, outside the
    # sandbox): none is left open to the learner's code, which ipykernel would otherwise
    # keep (it duplicates them to echo output). Kernel output goes over zmq.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    from ipykernel.kernelapp import launch_new_instance

    sys.argv[0] = "ipykernel_launcher"
    launch_new_instance()


if __name__ == "__main__":
    main()
