"""Where this process may make memory cgroups (:func:`find_hierarchy`): cgroup v1's memory
controller, or a delegated cgroup v2 subtree (``$AUTOGRADER_CGROUP``), read from
``/proc/self/mountinfo`` and ``/proc/self/cgroup``, with the reason when there is none.
:func:`autograder.cgroups.writable_hierarchy` makes one there to be sure."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from autograder import env_vars


@dataclass
class Hierarchy:
    """Where this process may make memory cgroups: cgroup ``version`` 1 or 2, under
    ``parent`` (a cgroup folder this process can write)."""

    version: int
    parent: Path


def _mounts() -> list[tuple[str, str, str, list[str]]]:
    """(mount point, root in its file system, file system type, super options) of every
    cgroup mount (/proc/self/mountinfo)."""
    out = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields, rest = left.split(), right.split()
                if len(fields) >= 5 and len(rest) >= 3 and rest[0] in ("cgroup", "cgroup2"):
                    point = fields[4].replace("\\040", " ")
                    out.append((point, fields[3], rest[0], rest[2].split(",")))
    except OSError:
        pass
    return out


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup per hierarchy: {"memory": path} (v1), {"": path} (v2)."""
    out = {}
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            for line in f:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) == 3:
                    for controller in parts[1].split(",") if parts[1] else [""]:
                        out[controller] = parts[2]
    except OSError:
        pass
    return out


def _inside(point: str, root: str, path: str) -> Path | None:
    """The folder of cgroup ``path`` in a mount of the hierarchy's ``root`` at ``point``."""
    root = root.rstrip("/")
    if root and not (path == root or path.startswith(root + "/")):
        return None
    return Path(point, path[len(root):].lstrip("/"))


def find_hierarchy() -> tuple[Hierarchy | None, str]:
    """(where to make memory cgroups, why not when None)."""
    own, mounts, why = _own_cgroups(), _mounts(), []
    env = env_vars.CGROUP.get()
    for point, root, kind, opts in mounts:  # cgroup v1 with the memory controller
        if kind == "cgroup" and "memory" in opts and "memory" in own:
            folder = Path(env) if env else _inside(point, root, own["memory"])
            if folder is None or not folder.is_dir():
                why.append(f"cgroup v1: this process's memory cgroup {own['memory']!r} is "
                           f"not under the mount {point}")
            elif not os.access(folder, os.W_OK):
                why.append(f"cgroup v1: {folder} is not writable (run the grader as root, or "
                           "give it a memory cgroup it may write: $AUTOGRADER_CGROUP)")
            else:
                return Hierarchy(1, folder), ""
    for point, root, kind, _opts in mounts:
        if kind != "cgroup2":
            continue
        folder = Path(env) if env else _inside(point, root, own.get("", "/"))
        if folder is None or not folder.is_dir():
            continue
        try:
            available = (folder / "cgroup.controllers").read_text().split()
        except OSError:
            available = []
        if "memory" not in available:
            why.append(f"cgroup v2: the memory controller is not available in {folder}")
            continue
        if not os.access(folder, os.W_OK):
            why.append(f"cgroup v2: {folder} is not writable (delegate a cgroup subtree to the "
                       "grader's user and name it in $AUTOGRADER_CGROUP)")
            continue
        return Hierarchy(2, folder), ""
    if not mounts:
        why.append("no cgroup file system is mounted (/proc/self/mountinfo)")
    return None, "; ".join(why) or "no memory cgroup hierarchy found"


def pids_folder_v1() -> Path | None:
    """This process's cgroup in cgroup v1's ``pids`` hierarchy, where it may make cgroups
    (None where there is no such hierarchy or it is not writable): where a kernel's number
    of processes and threads is limited when its memory is capped in cgroup v1."""
    own = _own_cgroups()
    for point, root, kind, opts in _mounts():
        if kind == "cgroup" and "pids" in opts and "pids" in own:
            folder = _inside(point, root, own["pids"])
            if folder is not None and folder.is_dir() and os.access(folder, os.W_OK):
                return folder
    return None
