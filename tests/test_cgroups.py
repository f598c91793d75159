"""The pure parts of autograder.cgroups: whose cgroup folder may be removed, a cgroup's
OOM-kill count, the kill-until-empty loop (no cgroup needed)."""

from __future__ import annotations

import os
import subprocess
import sys

from autograder.cgroups import kill_until_empty, oom_kill_count, owner_gone


def test_a_folder_is_stale_only_when_its_grading_process_has_ended():
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    assert owner_gone(f"autograder-kernel-{ended.pid}-abc") is True
    assert owner_gone(f"autograder-peak-{os.getpid()}-abc") is False  # this process runs
    assert owner_gone("autograder-kernel-notapid-abc") is False        # not a name of ours
    assert owner_gone("autograder") is False


def test_the_oom_kill_count_is_read_from_either_version_s_file(tmp_path):
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n")
    assert oom_kill_count(tmp_path, 2) == 2
    (tmp_path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 5\n")
    assert oom_kill_count(tmp_path, 1) == 5
    assert oom_kill_count(tmp_path / "gone", 2) == 0


def test_kill_until_empty_kills_what_the_list_names_until_it_is_empty():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    alive = lambda: [child.pid] if child.poll() is None else []  # noqa: E731
    assert kill_until_empty(alive, seconds=10) is True
    assert child.wait(timeout=10) == -9
    assert kill_until_empty(lambda: [], seconds=0.1) is True


FORKS = """\
import os, sys, time
sys.stdin.readline()
n = 0
try:
    while n < 5000:
        if os.fork() == 0:
            os.close(1)  # the test reads the parent's count to the end of this pipe
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError:
    pass
print(n, flush=True)
"""


def test_a_kernel_cgroup_holds_at_most_max_tasks_processes_and_threads():
    """Red team: a kernel made 8000 zombie processes in 5 s, at about 15 KB of the memory
    cap each: under a 4 GiB cap one kernel could hold every process ID of a machine with
    pid_max 32768, for every process on it. A kernel's cgroup now holds at most
    MAX_TASKS: the learner's fork fails past it (the parent counts as one)."""
    import pytest

    from autograder import kernel_memory

    try:
        group = kernel_memory.KernelCgroup(2**30)
    except OSError as exc:
        pytest.skip(f"no memory cgroup here: {exc}")
    try:
        if group.version == 1 and group.tasks_path is None:
            pytest.skip("cgroup v1 without a writable pids hierarchy")
        if group.version == 2 and not (group.path / "pids.max").is_file():
            pytest.skip("cgroup v2 without the pids controller in the grader's subtree")
        proc = subprocess.Popen([sys.executable, "-c", FORKS], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        group.add(proc.pid)
        out, _ = proc.communicate("go\n", timeout=120)
        assert int(out) == kernel_memory.MAX_TASKS - 1, out
    finally:
        group.close()
    assert not group.path.exists() and not (group.tasks_path and group.tasks_path.exists())
