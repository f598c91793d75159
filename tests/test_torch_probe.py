"""ex05's probe process (autograder/torch_probe.py, torch_probe_process.py) started ahead:
``check`` starts it before the checker imports torch (issue 25); the next run for the same
assignment hands that process its request instead of starting another; a process started
for another assignment is not taken, and none is left running."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import torch

from autograder import torch_probe_process
from autograder.sandbox import descendants, sandbox_error
from autograder.checks.ex05._probe_calls import request_node

A = "ex05_torch_attention"
CELLS = ["def double(x):\n    return 2 * x"]


def calls() -> list[dict]:
    return [{"call": "double", "args": request_node((torch.tensor([1.0, 2.5]),)),
             "kwargs": {}, "cuda": False}]


@pytest.fixture
def started(monkeypatch):
    """Every probe process started, in order (its _Started)."""
    made = []
    real = torch_probe_process._Started.__init__

    def init(self, assignment, timeout):
        real(self, assignment, timeout)
        made.append(self)

    monkeypatch.setattr(torch_probe_process._Started, "__init__", init)
    yield made
    for s in made:
        s.close()


def doubled(answer: dict) -> list[float]:
    reply = answer["replies"][0]
    assert reply["tensor"] == "float32" and reply["shape"] == [2], reply
    return reply["data"]


def test_a_process_started_ahead_is_the_one_that_runs(started):
    torch_probe_process.spawn_ahead(A, timeout=60)
    assert len(started) == 1 and started[0].proc.poll() is None     # waiting, torch loading
    answer = torch_probe_process.run(CELLS, calls(), timeout=60, assignment=A)
    assert doubled(answer) == [2.0, 5.0] and answer["off"] > 0       # attention switched off
    assert len(started) == 1 and started[0].proc.returncode == 0     # that one, finished
    assert not started[0].course.exists()                            # its course copy gone
    answer = torch_probe_process.run(CELLS, calls(), timeout=60, assignment=A)
    assert doubled(answer) == [2.0, 5.0] and len(started) == 2       # taken once only


def test_a_process_for_another_assignment_is_not_taken(started):
    torch_probe_process.spawn_ahead("ex07_transformer", timeout=60)
    answer = torch_probe_process.run(CELLS, calls(), timeout=60, assignment=A)
    assert doubled(answer) == [2.0, 5.0] and len(started) == 2       # a new one ran
    assert started[0].proc.poll() is None                            # ex07's still waits
    started[0].close()
    assert started[0].proc.returncode is not None and not started[0].course.exists()


def _spawn_then_end_when_python_runs() -> None:
    """spawn_ahead, then end this thread once Python runs in the sandbox (bubblewrap has set
    its parent-death signal by then: it is the thread that started it that it follows)."""
    torch_probe_process.spawn_ahead(A, 60)
    pid = torch_probe_process._AHEAD[0].proc.pid
    while not any(b"python" in Path(f"/proc/{p}/cmdline").read_bytes()
                  for p in descendants(pid) if Path(f"/proc/{p}/cmdline").exists()):
        time.sleep(0.01)


@pytest.mark.skipif(sandbox_error() is not None, reason="no bubblewrap here: nothing follows the "
                    "starting thread")
def test_a_process_started_by_a_thread_that_ended_still_waits(started):
    """check starts it from its head-start thread, which ends soon after: the process
    outlives that thread (bubblewrap's --die-with-parent follows the thread that started it)
    and is the one that runs."""
    thread = threading.Thread(target=_spawn_then_end_when_python_runs)
    thread.start()
    thread.join()
    time.sleep(0.2)  # a parent-death signal, had there been one, is delivered by now
    answer = torch_probe_process.run(CELLS, calls(), timeout=60, assignment=A)
    assert doubled(answer) == [2.0, 5.0] and len(started) == 1       # the one started ahead
