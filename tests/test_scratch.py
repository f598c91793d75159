"""Scratch folders left by a killed grader are removed by the next one (issue 24): only a
folder whose process is gone and which has not changed for an hour."""

from __future__ import annotations

import os
import subprocess
import sys

from autograder import scratch

PREFIX = "autograder-zygote-"


def dead_pid() -> int:
    """The PID of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def folder(root, name: str, age: float, now: float):
    path = root / name
    path.mkdir()
    (path / "run").mkdir()
    (path / "run" / "kernel.json").write_text("{}", encoding="utf-8")
    os.utime(path, (now - age, now - age))
    return path


def test_only_an_old_folder_of_a_gone_process_is_removed(tmp_path):
    now, hour = 1_000_000_000.0, scratch.STALE_AFTER
    gone, alive = dead_pid(), os.getpid()
    orphan = folder(tmp_path, f"{PREFIX}{gone}-abc", 2 * hour, now)
    kept = [folder(tmp_path, f"{PREFIX}{alive}-abc", 2 * hour, now),    # its process lives
            folder(tmp_path, f"{PREFIX}{gone}-def", hour / 2, now),     # changed lately
            folder(tmp_path, f"{PREFIX}old-style", 2 * hour, now),      # no PID in its name
            folder(tmp_path, f"autograder-kernel-{gone}-abc", 2 * hour, now)]  # other prefix
    assert scratch.sweep(PREFIX, root=tmp_path, now=now) == [orphan]
    assert not orphan.exists() and all(k.is_dir() for k in kept)


def test_a_new_folder_is_named_after_its_process(tmp_path, monkeypatch):
    monkeypatch.setattr(scratch.tempfile, "tempdir", str(tmp_path))
    made = scratch.scratch_dir(PREFIX)
    assert made.parent == tmp_path and made.name.startswith(f"{PREFIX}{os.getpid()}-")
    assert scratch.sweep(PREFIX, root=tmp_path, now=made.stat().st_mtime + 10 * 3600) == []


def test_a_learner_tree_too_deep_for_rmtree_does_not_stop_the_next_grader(tmp_path, deep_tree):
    """A killed grader's zygote folder held a tree a learner made 1500 deep: the sweep's
    rmtree raised RecursionError, so every later sandbox failed to start and a whole
    class was graded 'error' (CI, after 630 s)."""
    now = 1_000_000_000.0
    orphan = folder(tmp_path, f"{PREFIX}{dead_pid()}-abc", 2 * scratch.STALE_AFTER, now)
    deep_tree(orphan / "run", 1500)
    os.utime(orphan, (now - 7200, now - 7200))
    assert scratch.sweep(PREFIX, root=tmp_path, now=now) == [orphan]
    assert not orphan.exists()


SHM_TMPFS = "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n"


def test_kernels_folders_go_to_dev_shm_only_where_it_is_a_tmpfs_with_room(monkeypatch):
    """What a kernel writes must be memory (charged to its cgroup, bounded by its cap), so
    its folders go to /dev/shm where that is a tmpfs it may write with a GiB free; a
    /dev/shm on disk, missing or too small (a container's 64 MiB) keeps the disk."""
    free = {"bytes": 2 * scratch.MIN_FREE_IN_MEMORY}
    monkeypatch.setattr(scratch.os, "access", lambda path, mode: True)
    monkeypatch.setattr(scratch.os, "statvfs", lambda path: os.statvfs_result(
        (4096, 4096, 0, 0, free["bytes"] // 4096, 0, 0, 0, 0, 255)))
    assert scratch.memory_root(SHM_TMPFS) == scratch.SHM
    assert scratch.memory_root("/dev/vda1 /dev/shm ext4 rw 0 0\n") is None
    assert scratch.memory_root("tmpfs /dev/shmx tmpfs rw 0 0\n") is None
    assert scratch.memory_root(SHM_TMPFS + "/dev/vda1 /dev/shm ext4 rw 0 0\n") is None  # on top
    free["bytes"] = 64 << 20
    assert scratch.memory_root(SHM_TMPFS) is None


def test_a_folder_in_memory_is_made_there_and_its_orphans_swept(tmp_path, monkeypatch):
    monkeypatch.setattr(scratch, "memory_root", lambda: tmp_path)
    now = 1_000_000_000.0
    orphan = folder(tmp_path, f"{PREFIX}{dead_pid()}-abc", 2 * scratch.STALE_AFTER, now)
    made = scratch.scratch_dir(PREFIX, in_memory=True)
    assert made.parent == tmp_path and made.name.startswith(f"{PREFIX}{os.getpid()}-")
    assert not orphan.exists()


def test_the_folders_of_an_ended_worker_go_at_once_wherever_they_are(tmp_path, monkeypatch):
    """Red team: a worker that died left its sandbox's folder in /dev/shm with 158,897 of a
    learner's entries (memory, until a sweep an hour later). The grader removes the
    folders of every prefix its worker left, in both places, as soon as it has ended."""
    disk, shm = tmp_path / "tmp", tmp_path / "shm"
    disk.mkdir()
    shm.mkdir()
    monkeypatch.setattr(scratch.tempfile, "tempdir", str(disk))
    monkeypatch.setattr(scratch, "memory_root", lambda: shm)
    gone, now = dead_pid(), 1_000_000_000.0
    left = [folder(shm, f"{PREFIX}{gone}-abc", 0, now),
            folder(disk, f"autograder-probe-work-{gone}-def", 0, now)]
    (left[0] / "work").mkdir()
    for i in range(3):
        (left[0] / "work" / f"f{i}").touch()
    kept = [folder(shm, f"{PREFIX}{gone}1-abc", 0, now),  # another process: its PID begins so
            folder(shm, f"{PREFIX}{os.getpid()}-abc", 0, now),  # a live one
            folder(shm, f"other-{gone}-abc", 0, now)]  # not ours
    assert sorted(scratch.remove_left_by(gone)) == sorted(left)
    assert not any(p.exists() for p in left) and all(p.is_dir() for p in kept)
    assert scratch.remove_left_by(os.getpid()) == []  # a live process's stay
