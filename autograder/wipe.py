"""Empty a folder that a learner's code could write: everything in it goes, whatever the code
made of it (standard library only: the warm sandbox's zygote imports it too).

A learner's code can make a tree that :func:`shutil.rmtree` cannot remove: deeper than
Python's recursion limit (rmtree recurses, and its ``ignore_errors`` does not cover the
RecursionError), with paths longer than PATH_MAX, or with folders that have no write or
search permission (a grader that is not root cannot remove what is in them). Left there,
such a tree would reach the next learner's kernel, which runs in the same folders. So
:func:`empty` removes what rmtree can, and gives what is left to coreutils (``chmod -R``,
then ``rm -rf``, which walk trees of any depth, run by ``find``), and says whether the
folder is empty.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess

# The tools' environment: found where Debian puts them, messages in plain ASCII.
_TOOLS_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
BATCH = 10_000  # entries listed at once; larger trees go to coreutils, which stream


def empty(folder: str | os.PathLike, keep=()) -> bool:
    """Remove everything inside ``folder`` (not ``folder`` itself, which may be a mount
    point) without following a symbolic link; return whether it is empty now but for
    ``keep``: paths inside ``folder`` (one, or several) that stay, with the folders above
    them (mount points there: the warm sandbox's ``/tmp`` holds its run folder, and the
    virtual environment when the course lies under ``/tmp``); everything beside them goes.
    A folder that does not exist counts as empty. Never raises."""
    folder = os.path.normpath(os.fspath(folder))
    keep = {os.path.normpath(os.fspath(k))
            for k in ((keep,) if isinstance(keep, (str, os.PathLike)) else keep)}
    inside = [k for k in keep if k.startswith(folder.rstrip(os.sep) + os.sep)]
    spare = {os.path.relpath(k, folder).split(os.sep)[0] for k in inside}
    done = _empty_but(folder, spare)
    for name in sorted(spare):
        below = os.path.join(folder, name)
        if below not in keep:  # only above kept paths: what else it holds goes
            done = empty(below, [k for k in inside if k.startswith(below + os.sep)]) and done
    return done


def remove(path: str | os.PathLike) -> bool:
    """Remove ``path`` (a folder with all it holds, a file, or a symbolic link, never
    followed) as :func:`empty` would; return whether it is gone. Never raises."""
    path = os.fspath(path)
    if os.path.isdir(path) and not os.path.islink(path) and not empty(path):
        return False
    try:
        (os.rmdir if os.path.isdir(path) and not os.path.islink(path) else os.unlink)(path)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def modes(paths, top: str) -> dict[str, int]:
    """The permission bits of each of ``paths`` that exists and, for one inside the folder
    ``top``, of every folder above it up to ``top`` (what :func:`restore_modes` puts back):
    the folders a kernel uses and cannot remove (mount points, the folders above them),
    which it can still ``chmod``."""
    top, found = os.path.normpath(top), {}
    for path in paths:
        path = os.path.normpath(os.fspath(path))
        while path not in found:
            try:
                found[path] = os.lstat(path).st_mode & 0o7777
            except OSError:
                break
            if path == top or not path.startswith(top.rstrip(os.sep) + os.sep):
                break
            path = os.path.dirname(path)
    return found


def restore_modes(kept: dict[str, int]) -> bool:
    """Give each folder of ``kept`` (from :func:`modes`) its recorded permission bits back
    and no POSIX ACL (red team: a kernel made its connection folder read-only, and the next
    learner's kernel could not make its sockets there: kernel-died, 0 points); whether every
    one has them now. Never raises."""
    ok = True
    for path, mode in kept.items():
        for acl in ("system.posix_acl_access", "system.posix_acl_default"):
            try:
                os.removexattr(path, acl, follow_symlinks=False)
            except OSError:
                pass  # none, or a file system without ACLs
        try:
            if os.lstat(path).st_mode & 0o7777 != mode:
                os.chmod(path, mode, follow_symlinks=False)
            ok = ok and os.lstat(path).st_mode & 0o7777 == mode
        except (OSError, NotImplementedError):
            ok = False
    return ok


def mount_points(mountinfo: str) -> list[str]:
    """The mount points a ``/proc/<pid>/mountinfo`` text lists (its fifth field, with
    ``\\040`` and the like for a space, a tab, a newline, a backslash): what a clean-up of
    a sandbox's ``/tmp`` leaves in place (``keep``), the grader's binds."""
    fields = (line.split() for line in mountinfo.splitlines())
    return [re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), f[4])
            for f in fields if len(f) > 4]


def _empty_but(folder: str, spare: set[str]) -> bool:
    """Remove every entry of ``folder`` but those named in ``spare``; whether none else
    is left."""
    try:
        _remove_entries(folder, spare)
    except (OSError, RecursionError):
        pass  # what is left goes to coreutils
    if _is_empty(folder, spare):
        return True
    but = [arg for name in sorted(spare) for arg in ("!", "-name", _literal(name))]
    for tool in (["chmod", "-R", "u+rwx"], ["rm", "-rf", "--one-file-system"]):
        try:
            subprocess.run(["find", folder, "-mindepth", "1", "-maxdepth", "1", *but,
                            "-exec", *tool, "--", "{}", "+"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, env=_TOOLS_ENV, check=False)
        except OSError:
            return False  # no findutils here
    return _is_empty(folder, spare)


def _remove_entries(folder: str, spare: set[str]) -> None:
    """What :func:`shutil.rmtree` can remove of ``folder``'s contents (fast, no process),
    :data:`BATCH` entries at a time, and of its folders the small ones only: rmtree lists
    each folder whole, and a learner's folder of millions of entries made the grader's
    worker run out of memory (red team: status error). The rest goes to coreutils."""
    while True:
        with os.scandir(folder) as entries:
            batch = list(itertools.islice(((e.path, e.is_dir(follow_symlinks=False))
                                           for e in entries if e.name not in spare), BATCH))
        removed = 0
        for path, is_dir in batch:
            if is_dir and _small(path):
                shutil.rmtree(path, ignore_errors=True)
            elif not is_dir:
                try:
                    os.unlink(path)
                except OSError:
                    pass
            removed += not os.path.lexists(path)
        if len(batch) < BATCH or not removed:
            return


def _small(folder: str) -> bool:
    """Whether the tree ``folder`` holds at most :data:`BATCH` entries (counted until then)."""
    return tree_weight(folder, lambda st: 1, BATCH) <= BATCH


def tree_weight(folder: str, weigh, stop_after: int) -> int:
    """The sum of ``weigh(lstat)`` over every entry below ``folder``, walked without
    recursion nor listing a folder whole, and no further once past ``stop_after`` (a
    learner's tree may hold millions); folders that cannot be read add nothing."""
    total, todo = 0, [folder]
    while todo and total <= stop_after:
        try:
            with os.scandir(todo.pop()) as entries:
                for e in entries:
                    total += weigh(e.stat(follow_symlinks=False))
                    if e.is_dir(follow_symlinks=False):
                        todo.append(e.path)
                    if total > stop_after:
                        break
        except OSError:
            continue
    return total


def _literal(name: str) -> str:
    """``name`` as a pattern of find's ``-name`` that matches only itself."""
    return "".join("\\" + c if c in "[]*?\\" else c for c in name)


def _is_empty(folder: str, spare: set[str]) -> bool:
    try:
        with os.scandir(folder) as entries:
            return all(e.name in spare for e in entries)
    except FileNotFoundError:
        return True
    except OSError:
        return False
