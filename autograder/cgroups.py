"""Memory cgroups: where this process may make them (cgroup v1's memory controller, or a
delegated cgroup v2 subtree named in ``$AUTOGRADER_CGROUP``), and the peak probe's own
(:class:`Cgroups`). The grading kernels' cgroups (:mod:`autograder.kernel_memory`) and the
peak probe (:mod:`autograder.peak_probe`) are made where :func:`writable_hierarchy` says."""

from __future__ import annotations

import functools
import os
import secrets
import signal
import time
from pathlib import Path

from autograder.cgroup_hierarchy import Hierarchy, find_hierarchy

# The probe's memory limit (both of its cgroups together, no swap): far above any honest
# peak and the largest library import (torch, ~0.5 GiB), below a grading machine's RAM.
LIMIT_BYTES = 4 * 2**30


def owner_gone(name: str) -> bool:
    """Whether the grading process whose pid is the third field of the cgroup folder's
    ``name`` (``autograder-<kind>-<pid>-<token>``) has ended; False when it runs, may not be
    signalled, or the name holds no pid (a folder that is not the course's to remove)."""
    try:
        os.kill(int(name.split("-")[2]), 0)
    except ProcessLookupError:
        return True
    except (ValueError, IndexError, OSError):
        return False
    return False


def oom_kill_count(folder: Path, version: int) -> int:
    """How many processes of the cgroup ``folder`` the OOM killer killed: the ``oom_kill``
    line of ``memory.events`` (cgroup v2) or ``memory.oom_control`` (v1); 0 when the file
    cannot be read (the cgroup is gone) or has no such line."""
    name = "memory.events" if version == 2 else "memory.oom_control"
    try:
        for line in (folder / name).read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def kill_until_empty(pids, seconds: float = 10.0) -> bool:
    """SIGKILL every process ``pids()`` lists (a cgroup's members), again and again until
    it lists none (a forking process adds members) or ``seconds`` pass; True when none is
    left. A process that is already gone is no error."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = pids()
        if not left:
            return True
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)
    return not pids()


class Cgroups:
    """The probe's cgroups: ``parent/autograder-peak-*`` (the memory limit, no swap) with
    the children ``setup`` and ``call``. Raises OSError where they cannot be made."""

    def __init__(self, hierarchy: Hierarchy):
        self.version = hierarchy.version
        self.top = hierarchy.parent / f"autograder-peak-{os.getpid()}-{secrets.token_hex(6)}"
        self.made: list[Path] = []
        try:
            self._mkdir(self.top)
            if self.version == 2:
                self._enable_memory(hierarchy.parent)
                self._write(self.top / "cgroup.subtree_control", "+memory")
                self._write(self.top / "memory.max", str(LIMIT_BYTES))
                self._try_write(self.top / "memory.swap.max", "0")
            else:
                self._write(self.top / "memory.limit_in_bytes", str(LIMIT_BYTES))
                self._try_write(self.top / "memory.memsw.limit_in_bytes", str(LIMIT_BYTES))
            self.setup, self.call = self.top / "setup", self.top / "call"
            self._mkdir(self.setup)
            self._mkdir(self.call)
            if not (self.call / self._peak_file).is_file():
                raise OSError(f"{self.call} has no {self._peak_file}")
        except OSError:
            self.close()
            raise

    @property
    def _peak_file(self) -> str:
        return "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"

    @property
    def _usage_file(self) -> str:
        return "memory.current" if self.version == 2 else "memory.usage_in_bytes"

    def _mkdir(self, path: Path) -> None:
        os.mkdir(path)
        self.made.append(path)

    @staticmethod
    def _write(path: Path, text: str) -> None:
        with open(path, "w", encoding="ascii") as f:
            f.write(text)

    def _try_write(self, path: Path, text: str) -> None:
        try:
            self._write(path, text)
        except OSError:  # swap accounting off: there is no swap to account
            pass

    def _enable_memory(self, parent: Path) -> None:
        control = parent / "cgroup.subtree_control"
        if "memory" not in control.read_text().split():
            try:
                self._write(control, "+memory")
            except OSError as exc:
                raise OSError(f"cgroup v2: the memory controller cannot be enabled for the "
                              f"children of {parent} ({exc}: a cgroup with processes in it "
                              "cannot; delegate an empty one in $AUTOGRADER_CGROUP)") from None

    @staticmethod
    def _read_int(path: Path) -> int:
        return int(path.read_text().split()[0])

    def add(self, pid: int) -> None:
        """Put process ``pid`` (not started yet: it waits for the grader) in ``setup``."""
        self._write(self.setup / "cgroup.procs", str(pid))

    def pids(self, group: Path) -> list[int]:
        try:
            return [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def move_to_call(self) -> None:
        """Every process of ``setup`` into ``call`` (they wait for the grader meanwhile);
        their memory stays charged to ``setup``."""
        for _ in range(100):  # a process forked meanwhile is moved on the next round
            pids = self.pids(self.setup)
            if not pids:
                return
            for pid in pids:
                try:
                    self._write(self.call / "cgroup.procs", str(pid))
                except ProcessLookupError:
                    pass
        raise OSError("the probe's processes could not all be moved to its call cgroup")

    def usage(self, group: Path) -> int:
        return self._read_int(group / self._usage_file)

    def peak(self) -> int:
        """The high-water mark of ``call`` since it was made (it began empty)."""
        return self._read_int(self.call / self._peak_file)

    def oom_kills(self) -> int:
        """Processes the kernel killed for the probe's memory limit."""
        return oom_kill_count(self.top, self.version)

    def kill_all(self) -> None:
        """SIGKILL to every process still in the probe's cgroups (the probe's own: nothing
        else is ever put there), until none is left (at most 10 s)."""
        kill_until_empty(lambda: self.pids(self.setup) + self.pids(self.call))

    def close(self) -> None:
        """Remove the cgroups (their processes killed first)."""
        if getattr(self, "setup", None) is not None:
            self.kill_all()
        for path in reversed(self.made):
            remove_cgroup(path)
        self.made = []


def remove_cgroup(path: Path) -> None:
    """Remove the empty cgroup ``path``, waiting up to 2 s for its processes, killed, to
    leave it (an exiting process leaves its cgroup a moment later)."""
    for _ in range(200):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


def _remove_stale(parent: Path) -> None:
    """Remove the probe cgroups a grading process that is gone left behind (it was killed
    while measuring: its probe died with it, the empty folders stayed)."""
    for top in parent.glob("autograder-peak-*-*"):
        if not owner_gone(top.name):
            continue  # its process still runs (or the name is not ours): in use
        for path in (top / "call", top / "setup", top):
            try:
                os.rmdir(path)
            except OSError:
                pass


@functools.lru_cache(maxsize=None)
def writable_hierarchy() -> tuple[Hierarchy | None, str]:
    """(where this process may make memory cgroups, why not when None); found once, with
    one cgroup made and removed there to be sure, and stale probe cgroups removed."""
    found, why = find_hierarchy()
    if found is None:
        return None, why
    _remove_stale(found.parent)
    try:  # made and removed once: the checks can rely on it
        Cgroups(found).close()
    except OSError as exc:
        return None, f"cgroup v{found.version}: a memory cgroup cannot be made under " \
            f"{found.parent}: {exc}"
    return found, ""


def cgroup_error() -> str | None:
    """Why the peak cannot be measured in a memory cgroup on this machine, or None when it
    can (the probe is then measured from outside; else it estimates inside itself)."""
    found, why = writable_hierarchy()
    return None if found is not None else why
