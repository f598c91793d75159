"""How long the processes the checker starts for a learner's code may run: CPU seconds.

Honest code needs about the same CPU time on a quiet machine and on a loaded one, but not
the same wall-clock time: a class graded beside other work (CI, a shared server) can take
five times longer by the clock. A limit on the clock would then fail honest code by a
timing accident. So every process the checker starts to run a learner's code (the
standard-library probe, ex05's attention probe, ex06's memory probe, rustc and the
compiled Rust program) is limited to the cell time limit in CPU seconds (``RLIMIT_CPU``:
inherited by its children, each counted on its own, the process killed by ``SIGXCPU``
past it), and the clock bounds it only as a backstop, :data:`BACKSTOP` times longer,
against code that waits instead of computing (a sleep, a blocked read).

The learner's kernel itself runs under nbgrader's cell limit on the clock, as in every
nbgrader course; what the checker counts there is the kernel's time only, never its own
(:meth:`autograder.session.Session.serving`).
"""

from __future__ import annotations

import math
import signal
import sys

# Wall-clock seconds a process may take per CPU second of its limit.
BACKSTOP = 5.0

# Run with -I -S -c: set the resource limits, then become the command (so that the
# command is this process's child's parent, and bwrap's --die-with-parent watches it).
_LIMITS = r'''
import os, resource, sys
cpu, space, size = (int(x) for x in sys.argv[1:4])
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
if cpu > 0:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
if space > 0:
    resource.setrlimit(resource.RLIMIT_AS, (space, space))
if size > 0:
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
os.execv(sys.argv[4], sys.argv[4:])
'''


def limited(cmd: list[str], cpu: float, space: int = 0, size: int = 0) -> list[str]:
    """``cmd`` (its first item an absolute path) run under resource limits: ``cpu``
    seconds of CPU (rounded up, at least 1), ``space`` bytes of address space and files
    of at most ``size`` bytes (0: no limit), no core file."""
    return [sys.executable, "-I", "-S", "-c", _LIMITS, str(max(1, math.ceil(cpu))),
            str(space), str(size), *cmd]


def backstop(cpu: float) -> float:
    """Wall-clock seconds a process limited to ``cpu`` CPU seconds may take in all."""
    return BACKSTOP * max(float(cpu), 1.0)


def out_of_cpu(returncode: int | None) -> bool:
    """Whether a process (or the bubblewrap sandbox around it, which reports a death by
    signal N as 128 + N) ended from its CPU limit."""
    return returncode in (-signal.SIGXCPU, 128 + signal.SIGXCPU)
