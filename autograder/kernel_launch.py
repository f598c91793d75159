"""Start a grading kernel in the sandbox: ``python -m autograder.kernel_launch -f FILE``.

Started by :class:`autograder.sandbox.SandboxedKernelManager` inside bubblewrap (or run as
``__main__`` in a process forked by :mod:`autograder.kernel_zygote`), it starts ipykernel
and nothing else. The kernel holds the learner's code, the helpers the released notebook
imports and the thin client (:mod:`autograder.kernel_client`): the hidden checks, the
references and the answers run in the trusted checker outside it (:mod:`autograder.checker`;
the contract's "The judge outside the judged"), so there is nothing in it to guard.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.dup2(2, 1)  # the process's own stdout is the grader's; kernel output goes over zmq
    from ipykernel.kernelapp import launch_new_instance

    sys.argv[0] = "ipykernel_launcher"
    launch_new_instance()


if __name__ == "__main__":
    main()
