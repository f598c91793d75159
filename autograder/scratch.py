"""Scratch folders that outlive no grader (issue 24): a folder under the temporary
directory (or ``/dev/shm``, for what a kernel writes) named after the process that made it,
``<prefix><pid>-<random>``.

A grader removes its folders when it ends. One killed with SIGKILL (a Dask worker stopped, a
test run cut short) cannot, so each new folder of a prefix first removes the folders of that
prefix whose process is gone and which nobody has touched for :data:`STALE_AFTER` seconds
(a folder of a process in another PID namespace that shares this ``/tmp`` may look
orphaned; it is still in use, so it keeps being touched, or it is young).
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path

from autograder import wipe

STALE_AFTER = 3600.0  # seconds since the folder last changed


SHM = Path("/dev/shm")
MIN_FREE_IN_MEMORY = 2**30  # bytes /dev/shm must have free to hold kernels' folders


def scratch_dir(prefix: str, in_memory: bool = False) -> Path:
    """A new folder ``<tmp>/<prefix><pid>-<random>``, once the stale ones of ``prefix`` are
    gone (:func:`sweep`).

    ``in_memory``: in ``/dev/shm`` where it is a tmpfs this process may write with at least
    :data:`MIN_FREE_IN_MEMORY` free (:func:`memory_root`), for the folders a learner's kernel
    writes: what a process writes to a tmpfs is memory charged to its memory cgroup, so the
    kernel's memory cap bounds it, where a folder on disk could fill the disk."""
    root = memory_root() if in_memory else None
    sweep(prefix, root)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=root))


def memory_root(mounts: str | None = None) -> Path | None:
    """``/dev/shm`` when it is a tmpfs (per ``mounts``, the text of /proc/self/mounts) that
    this process may write and that has :data:`MIN_FREE_IN_MEMORY` free; else None."""
    if mounts is None:
        try:
            with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
                mounts = f.read()
        except OSError:
            return None
    kinds = [ln.split()[2] for ln in mounts.splitlines()
             if len(ln.split()) > 2 and ln.split()[1] == str(SHM)]
    if not kinds or kinds[-1] != "tmpfs" or not os.access(SHM, os.W_OK | os.X_OK):
        return None
    st = os.statvfs(SHM)
    return SHM if st.f_bavail * st.f_frsize >= MIN_FREE_IN_MEMORY else None


def sweep(prefix: str, root: Path | None = None, now: float | None = None) -> list[Path]:
    """Remove the folders ``<root>/<prefix><pid>-*`` whose process ``pid`` no longer exists
    and which have not changed for :data:`STALE_AFTER` seconds; return those removed."""
    root = Path(tempfile.gettempdir()) if root is None else root
    now = time.time() if now is None else now
    owner = re.compile(re.escape(prefix) + r"(\d+)-")
    removed = []
    for path in root.glob(f"{prefix}*"):
        match = owner.match(path.name)
        try:
            stale = now - path.lstat().st_mtime > STALE_AFTER
        except OSError:
            continue
        if match and stale and path.is_dir() and not path.is_symlink() \
                and not _alive(int(match.group(1))):
            if wipe.remove(path):  # a learner's tree too deep for rmtree included
                removed.append(path)
    return removed


def remove_left_by(pid: int) -> list[Path]:
    """Remove the scratch folders of every prefix that the process ``pid``, which has ended
    (a grading worker killed with its kernels), left in the temporary folder and in
    ``/dev/shm``: what its kernels wrote is memory there, not to wait for a sweep an hour
    later. Returns those removed."""
    if _alive(pid):
        return []
    mine = re.compile(r"autograder-[a-z-]+?-" + str(int(pid)) + r"-[^/]*$")
    removed = []
    for root in {Path(tempfile.gettempdir()), memory_root() or Path(tempfile.gettempdir())}:
        for path in root.glob(f"autograder-*-{int(pid)}-*"):
            if mine.fullmatch(path.name) and path.is_dir() and not path.is_symlink() \
                    and wipe.remove(path):
                removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists here (another user's counts)."""
    if pid <= 0:
        return True  # not a process of ours: leave it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
