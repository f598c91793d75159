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
