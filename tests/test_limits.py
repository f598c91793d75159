"""The limits of what the checker runs for a learner's code (autograder.limits): CPU
seconds, the wall clock only as a backstop (issue 23: no honest timeout under load)."""

from __future__ import annotations

import subprocess
import sys

from autograder import limits


def test_a_busy_loop_ends_at_its_cpu_limit_and_is_told_apart():
    done = subprocess.run(limits.limited([sys.executable, "-c", "while True: pass"], 1),
                          capture_output=True, timeout=limits.backstop(1) + 30)
    assert limits.out_of_cpu(done.returncode), done.returncode
    ok = subprocess.run(limits.limited([sys.executable, "-c", "print(6 * 7)"], 1),
                        capture_output=True, timeout=limits.backstop(1) + 30)
    assert ok.returncode == 0 and ok.stdout == b"42\n" and not limits.out_of_cpu(0)


def test_waiting_costs_no_cpu_time_so_only_the_backstop_bounds_it():
    """A process that sleeps longer than its CPU limit is not stopped by it: a loaded
    machine slows honest code down by the clock, never by its CPU seconds."""
    done = subprocess.run(limits.limited([sys.executable, "-c",
                                          "import time; time.sleep(1.5); print('woke')"], 1),
                          capture_output=True, timeout=limits.backstop(1) + 30)
    assert done.returncode == 0 and done.stdout == b"woke\n"
    assert limits.backstop(60) == limits.BACKSTOP * 60 and limits.backstop(0) == limits.BACKSTOP
