"""The memory cap of a grading kernel (``grade --memory-mb M``): every page it makes resident.

A grading worker (:mod:`autograder.grading.pool`) sets :func:`set_cap` and the resource
limits before anything else: ``RLIMIT_DATA`` (heap and private writable mappings: an
allocation past it raises ``MemoryError`` in the learner's cell) and ``RLIMIT_FSIZE`` (no
single file past M). Neither counts shared memory: ``mmap.mmap(-1, n)`` (shared anonymous
pages), files written to the sandbox's ``/tmp`` or ``/dev/shm`` (tmpfs, that is memory),
``memfd_create``, System V segments, or the memory of the processes a kernel starts. So:

- each kernel runs in a **memory cgroup of its own** (:class:`KernelCgroup`) made by the
  grader where it can make one (the cgroup v1 memory controller, or a delegated cgroup v2
  subtree in ``$AUTOGRADER_CGROUP``: :func:`autograder.cgroups.cgroup_error`), limited to
  M without swap. Everything the kernel and its processes make resident is charged to it:
  anonymous and shared pages, tmpfs files, page cache, the kernel's own buffers. Past M the
  kernel's processes are killed by the operating system's OOM killer; the grader reads the
  cgroup's OOM-kill count and the submission's status is ``out-of-memory``, not
  ``kernel-died`` (:func:`oom_killed`);
- the sandbox's ``/tmp`` and ``/dev/shm`` are tmpfs mounts of at most M bytes each
  (bubblewrap's ``--size``, :func:`autograder.sandbox.tmpfs_size_args`), with or without a cgroup;
  the two folders it may write besides, its working folder (the submission's copy) and its
  connection folder, are in the host's ``/dev/shm`` where that is a tmpfs with room
  (:func:`autograder.scratch.memory_root`): memory as well, charged to the kernel's cgroup,
  never the host's disk;
- where no cgroup can be made, a thread of the grader (:class:`Watchdog`) adds up, every
  :data:`WATCH_INTERVAL` seconds, the resident anonymous and shared memory of every process
  of the kernel's sandbox and what its ``/tmp``, ``/dev/shm``, working folder and connection
  folder hold, and kills the kernel past M (the status is ``out-of-memory`` too). It
  samples: memory touched faster than it looks can exceed M by what is written in one
  interval, never by gigabytes.
  :func:`mode` says which applies.
"""

from __future__ import annotations

import os
import secrets
import threading
from pathlib import Path

from autograder import wipe
from autograder.cgroup_hierarchy import pids_folder_v1
from autograder.cgroups import (
    kill_until_empty, oom_kill_count, owner_gone, remove_cgroup, writable_hierarchy)

MIB = 2**20
WATCH_INTERVAL = 0.05
# Processes and threads a kernel may have at once (the pids controller): far above any honest
# kernel's (ipykernel, torch and rustc use tens), far below the machine's process IDs (red
# team: 8000 zombies in 5 s, about 15 KB of the memory cap each: a kernel under a 4 GiB cap
# could have held every PID of a machine with pid_max 32768, for every process on it).
MAX_TASKS = 512
ENTRY_BYTES = 1024  # what a file or folder counts at least (its inode) in folder_bytes
_CAP = [0]  # bytes; 0: no cap (``check``, a test calling nbgrader directly)


def set_cap(cap_bytes: int) -> None:
    """The memory cap of every kernel this process starts (0: none)."""
    _CAP[0] = max(0, int(cap_bytes))


def cap() -> int:
    """The memory cap of a kernel in bytes (0: none)."""
    return _CAP[0]


def mode() -> str:
    """How a kernel's memory is capped here: ``cgroup v1``, ``cgroup v2`` or ``watchdog``."""
    found, _why = writable_hierarchy()
    return f"cgroup v{found.version}" if found is not None else "watchdog"


class KernelCgroup:
    """One kernel's memory cgroup ``parent/autograder-kernel-PID-HEX``, limited to ``limit``
    bytes without swap, and at most :data:`MAX_TASKS` processes and threads where the
    ``pids`` controller can be used (cgroup v2: the same cgroup; v1: one of the same name
    in its ``pids`` hierarchy). Raises OSError where the memory cgroup cannot be made."""

    def __init__(self, limit: int):
        found, why = writable_hierarchy()
        if found is None:
            raise OSError(why)
        self.version = found.version
        _remove_stale(found.parent)
        self.path = found.parent / f"autograder-kernel-{os.getpid()}-{secrets.token_hex(6)}"
        os.mkdir(self.path)
        self.oom_kills = 0
        self.tasks_path = None  # cgroup v1's pids cgroup of this kernel, where made
        try:
            if self.version == 2:
                self._write("memory.max", str(limit))
                self._write("memory.swap.max", "0", optional=True)
                self._write("pids.max", str(MAX_TASKS), optional=True)
            else:
                self._write("memory.limit_in_bytes", str(limit))
                self._write("memory.memsw.limit_in_bytes", str(limit), optional=True)
                self.tasks_path = _tasks_cgroup_v1(self.path.name)
        except OSError:
            self.close()
            raise

    def _write(self, name: str, text: str, optional: bool = False) -> None:
        try:
            with open(self.path / name, "w", encoding="ascii") as f:
                f.write(text)
        except OSError:
            if not optional:  # swap accounting off: there is no swap to account
                raise

    def add(self, pid: int) -> None:
        """Put process ``pid`` (and, cgroup v1 and v2, all its threads) in the cgroup."""
        self._write("cgroup.procs", str(pid))
        if self.tasks_path is not None:
            (self.tasks_path / "cgroup.procs").write_text(str(pid), encoding="ascii")

    def procs_files(self) -> str:
        """The ``cgroup.procs`` files a process writes its PID to, to enter the cgroups
        (one a line)."""
        return "\n".join(str(p / "cgroup.procs") for p in (self.path, self.tasks_path) if p)

    def read_oom_kills(self) -> int:
        """Processes of the cgroup the OOM killer killed (kept after :meth:`close`)."""
        self.oom_kills = max(self.oom_kills, oom_kill_count(self.path, self.version))
        return self.oom_kills

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def close(self) -> None:
        """Kill what is left in the cgroup and remove it (its OOM count is kept)."""
        if not self.path.is_dir():
            return
        self.read_oom_kills()
        kill_until_empty(self.pids)
        for path in (self.path, self.tasks_path):
            if path is not None:
                remove_cgroup(path)


def _tasks_cgroup_v1(name: str) -> Path | None:
    """A cgroup ``name`` in cgroup v1's ``pids`` hierarchy limited to :data:`MAX_TASKS`
    (None where there is none to use: the memory cap still holds)."""
    parent = pids_folder_v1()
    if parent is None:
        return None
    _remove_stale(parent)
    path = parent / name
    try:
        os.mkdir(path)
        (path / "pids.max").write_text(str(MAX_TASKS), encoding="ascii")
    except OSError:
        try:
            os.rmdir(path)
        except OSError:
            pass
        return None
    return path


_STALE_DONE: set = set()


def _remove_stale(parent) -> None:
    """Remove (once per process) the kernel cgroups a grading process that is gone left
    (it was killed while a kernel ran: the kernel died with it, the empty folder stayed)."""
    if parent in _STALE_DONE:
        return
    _STALE_DONE.add(parent)
    for path in parent.glob("autograder-kernel-*-*"):
        if not owner_gone(path.name):
            continue  # its grading process still runs
        try:
            os.rmdir(path)
        except OSError:
            pass


def _kib(status: str, field: str) -> int:
    for line in status.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def folder_bytes(folder: str, stop_after: int) -> int:
    """The bytes the files under ``folder`` take (allocated blocks; each entry at least
    :data:`ENTRY_BYTES`, its inode), counted until more than ``stop_after``: a folder on a
    tmpfs that holds others' folders too, whose own usage no statvfs gives."""
    return wipe.tree_weight(folder, lambda st: max(st.st_blocks * 512, ENTRY_BYTES), stop_after)


def resident_bytes(pids: list[int], roots: list[str], folders: list[str] = ()) -> int:
    """Resident anonymous and shared memory of ``pids`` plus what the tmpfs mounts
    ``roots`` and the folders ``folders`` hold (a shared page counts once per process
    mapping it)."""
    total = sum(folder_bytes(f, _CAP[0] or 2**62) for f in folders)
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status", encoding="ascii") as f:
                status = f.read()
        except OSError:
            continue
        total += (_kib(status, "RssAnon") + _kib(status, "RssShmem")) * 1024
    for root in roots:
        try:
            st = os.statvfs(root)
        except OSError:
            continue
        total += (st.f_blocks - st.f_bfree) * st.f_frsize
    return total


class Watchdog(threading.Thread):
    """Where no cgroup can be made: kill the kernel once the resident memory of its
    processes (``pids()``), its tmpfs mounts (``roots()``) and the folders it may write
    outside them (``folders()``) pass ``limit``."""

    def __init__(self, limit: int, pids, roots, kill, folders=list):
        super().__init__(daemon=True, name="autograder-memory-watchdog")
        self.limit, self._pids, self._roots, self._kill = limit, pids, roots, kill
        self._folders = folders
        self.fired = False
        self.peak = 0
        self._stop = threading.Event()

    def run(self) -> None:
        while not self._stop.wait(WATCH_INTERVAL):
            try:
                used = resident_bytes(self._pids(), self._roots(), self._folders())
            except Exception:  # noqa: BLE001 - a process gone between two reads
                continue
            self.peak = max(self.peak, used)
            if used > self.limit:
                self.fired = True
                self._kill()
                return

    def stop(self) -> None:
        self._stop.set()


def oom_killed(km) -> bool:
    """Whether the memory cap stopped a process of ``km``'s kernel (a
    :class:`autograder.sandboxed_kernel.SandboxedKernelManager`; False for any other)."""
    check = getattr(km, "memory_exceeded", None)
    return bool(check()) if callable(check) else False
