"""ex05's probe process (autograder/torch_probe.py, torch_probe_process.py) started ahead:
``check`` starts it before the checker imports torch (issue 25); the next run for the same
assignment hands that process its request instead of starting another; a process started
for another assignment is not taken, and none is left running."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from autograder import torch_probe_process, warm_zygotes
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


@pytest.fixture
def warm_probes():
    """This process's probes' warm sandbox, as a grading worker of ex05 starts it (prewarm
    starts the kernels' one too, which these tests do not use)."""
    from autograder import warm_zygotes

    if sandbox_error() is not None:
        pytest.skip("no bubblewrap here: no warm sandbox")
    zygote = warm_zygotes.start_probes()
    zygote.wait_ready()
    assert warm_zygotes.warm_probes() is zygote
    yield zygote
    warm_zygotes.close_warm()


def test_a_worker_of_a_probed_exercise_starts_the_probes_sandbox_too(monkeypatch):
    """prewarm starts the kernels' warm sandbox for every class, and the probes' one (torch
    imported) only when an exercise of the class runs ex05's probe."""
    from autograder import warm_zygotes

    started = []
    monkeypatch.setattr(warm_zygotes, "zygote_for",
                        lambda assignment, preload=None, wait=True, use="kernels":
                        started.append((use, "torch" in (preload or ()), wait)))
    warm_zygotes.prewarm(["ex01_python_attention"])
    assert started == [("kernels", False, False)]
    started.clear()
    warm_zygotes.prewarm(["ex01_python_attention", A])
    assert started == [("kernels", True, False), ("probes", True, False)]


# What the first learner's probe leaves behind: a file in /tmp, a process of its own (a
# fork: the probe refuses execve); what the second's counts of them.
LEAVE = ("import os, time\nopen('/tmp/left', 'w').write('x')\n"
         "if os.fork() == 0:\n    time.sleep(600)\n")
COUNT = ("import os, torch\ndef leftovers(x):\n"
         "    procs = [p for p in os.listdir('/proc') if p.isdigit()]\n"
         "    return x * 0 + 100 * os.path.exists('/tmp/left') + len(procs)\n")


def test_a_grading_worker_forks_each_probe_from_its_warm_sandbox(warm_probes, started):
    """A grading worker's probes are forked by a warm sandbox of their own (torch imported
    once): the same answer as a process of its own (attention switched off, execve refused),
    and the next probe finds nothing the last one left: no file, no process (itself and the
    sandbox's PID 1 only)."""
    delegating = CELLS + ["import torch.nn.functional as F\n"
                          "def sdpa(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)"]
    x = torch.ones(1, 2, 3)
    asks = calls() + [{"call": "sdpa", "args": request_node((x, x, x)), "kwargs": {},
                       "cuda": False}]
    answer = torch_probe_process.run(delegating + [LEAVE], asks, timeout=60, assignment=A)
    assert not started, "a process of its own was started"
    assert doubled(answer) == [2.0, 5.0] and answer["off"] > 0 and answer["no_exec"] is True
    assert "switched off" in answer["replies"][1]["raised"]["message"], answer["replies"][1]
    assert answer["hits"] == ["aten::scaled_dot_product_attention"]
    count = [{"call": "leftovers", "args": request_node((torch.tensor([0.0]),)), "kwargs": {},
              "cuda": False}]
    answer = torch_probe_process.run([COUNT], count, timeout=60, assignment=A)
    assert answer["replies"][0]["data"] == [2.0], answer


def test_a_forked_probe_past_its_cpu_limit_fails(warm_probes):
    with pytest.raises(torch_probe_process.ProbeFailed, match="longer than 1 s of CPU time"):
        torch_probe_process.run(["while True:\n    pass"], calls(), timeout=1, assignment=A)
    answer = torch_probe_process.run(CELLS, calls(), timeout=60, assignment=A)
    assert doubled(answer) == [2.0, 5.0]  # the sandbox serves the next probe


# A tree deeper than Python's recursion limit in every folder a probe can write: its
# working folder (/submission, which the grader wipes) and /tmp (which the sandbox's PID 1
# wipes). shutil.rmtree raised RecursionError on it: the warm sandbox stayed dirty and
# every later probe of the worker failed (an honest learner lost ex05's probe points).
DEEP = ("import os\ndef deep(top):\n    os.chdir(top)\n    for _ in range(1500):\n"
        "        os.mkdir('d')\n        os.chdir('d')\n"
        "deep('/submission')\ndeep('/tmp')\n")
SEES = ("import os, torch\ndef leftovers(x):\n"
        "    return x * 0 + os.path.exists('/submission/d') + 10 * os.path.exists('/tmp/d')\n")


def test_a_tree_too_deep_for_rmtree_is_wiped_before_the_next_probe(warm_probes, started):
    torch_probe_process.run(CELLS + [DEEP], calls(), timeout=60, assignment=A)
    assert warm_zygotes.warm_probes() is warm_probes  # wiped: the same sandbox goes on
    count = [{"call": "leftovers", "args": request_node((torch.tensor([0.0]),)), "kwargs": {},
              "cuda": False}]
    answer = torch_probe_process.run([SEES], count, timeout=60, assignment=A)
    assert answer["replies"][0]["data"] == [0.0], answer
    answer = torch_probe_process.run(CELLS, calls(), timeout=60, assignment=A)
    assert doubled(answer) == [2.0, 5.0] and not started  # all forked, full marks


# The grader binds its run folder at /dev/shm/autograder-zygote-*/run (or /tmp/...) in the
# sandbox: a probe can rename the folder above it. Kept as a mount point wherever it went,
# the sandbox counted as clean and went on, and the next probe's run folder was not where
# the grader put it. A mount point moved now ends the sandbox: the next probe runs in a
# fresh one.
MOVES = ("import os\nfor top in ('/tmp/', '/dev/shm/'):\n    for name in os.listdir(top):\n"
         "        if name.startswith('autograder-'):\n"
         "            os.rename(top + name, top + 'moved-' + name)\n")


def test_a_probe_that_moves_the_grader_s_folder_ends_its_sandbox(warm_probes, started):
    try:
        torch_probe_process.run(CELLS + [MOVES], calls(), timeout=60, assignment=A)
    except torch_probe_process.ProbeFailed:
        pass  # its own answer may be lost with the folder: only its points
    assert warm_zygotes.warm_probes() is None and not warm_probes.alive()
    answer = torch_probe_process.run(CELLS, calls(), timeout=60, assignment=A)
    assert doubled(answer) == [2.0, 5.0]  # the next learner's probe: full marks


# Red team: a kernel appended os._exit to the course's files, for the next kernel of the
# warm sandbox (they were copied again before it). They are read-only now.
WRITES = ("import os, torch\ndef writes(x):\n    try:\n"
          "        open('/opt/autograder-course/autograder/testing.py', 'a').close()\n"
          "    except OSError as exc:\n        return x * 0 + exc.errno\n    return x * 0\n")


def test_a_probe_cannot_change_the_course_s_files(warm_probes):
    ask = [{"call": "writes", "args": request_node((torch.tensor([0.0]),)), "kwargs": {},
            "cuda": False}]
    answer = torch_probe_process.run([WRITES], ask, timeout=60, assignment=A)
    assert answer["replies"][0]["data"] == [30.0], answer  # EROFS


def test_closing_a_probe_another_thread_waits_on_kills_it_without_an_error(tmp_path):
    """A probe process closed (at exit, by ``check``) while :func:`torch_probe_process.run`
    still waits on it in another thread, stdin already written and closed: the process is
    killed, close() raises nothing (its own communicate() would flush the closed stdin: a
    traceback at the end of a loaded run's check), and the waiting thread returns."""
    started = object.__new__(torch_probe_process._Started)  # a probe that never answers
    started.proc = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nsys.stdin.read()\ntime.sleep(600)"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started.course, started._closed = tmp_path / "course", threading.Event()
    started.course.mkdir()
    waiting = threading.Thread(target=started.proc.communicate, args=(b"{}",))
    waiting.start()
    deadline = time.monotonic() + 120
    while not started.proc.stdin.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert started.proc.stdin.closed
    started.close()
    waiting.join(120)
    assert not waiting.is_alive() and started.proc.returncode == -9
    assert not started.course.exists()


def test_closing_a_probe_kills_what_its_sandbox_left_holding_its_pipes(tmp_path):
    """A probe's process group is killed whole: a process it left behind (bubblewrap's inner
    process when the outer one is killed during its start-up, before ``--die-with-parent``
    is armed: bubblewrap issue 633) dies with it, so close() does not wait for ever on the
    pipes that process held (a ``check --warm`` host stayed at exit for 48 minutes)."""
    started = object.__new__(torch_probe_process._Started)
    started.proc = subprocess.Popen(  # the child keeps stdout and stderr, as that one did
        ["sh", "-c", "sleep 600 & echo started; exec sleep 600"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    assert started.proc.stdout.readline() == b"started\n"  # the child is there
    started.course, started._closed = tmp_path / "course", threading.Event()
    started.course.mkdir()
    closing = threading.Thread(target=started.close, daemon=True)
    closing.start()
    closing.join(60)
    assert not closing.is_alive(), "close() waits on a pipe the sandbox's orphan holds"
    assert started.proc.returncode == -9 and not started.course.exists()
