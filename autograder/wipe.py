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

import os
import shutil
import subprocess

# The tools' environment: found where Debian puts them, messages in plain ASCII.
_TOOLS_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}


def empty(folder: str | os.PathLike, keep: str | None = None) -> bool:
    """Remove everything inside ``folder`` (not ``folder`` itself, which may be a mount
    point) without following a symbolic link; return whether it is empty now. ``keep``: a
    path inside ``folder`` that stays, with the folders above it (a mount point there: the
    warm sandbox's ``/tmp`` holds its run folder); everything beside them goes. A folder
    that does not exist counts as empty. Never raises."""
    folder = os.fspath(folder)
    spare = None
    if keep is not None:
        rel = os.path.relpath(keep, folder)
        if rel != os.curdir and not rel.startswith(os.pardir):
            spare = rel.split(os.sep)[0]
    done = _empty_but(folder, spare)
    below = None if spare is None else os.path.join(folder, spare)
    if below is not None and below != os.path.normpath(keep):
        done = empty(below, keep) and done
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


def _empty_but(folder: str, spare: str | None) -> bool:
    """Remove every entry of ``folder`` but ``spare``; whether none else is left."""
    try:
        _remove_entries(folder, spare)
    except (OSError, RecursionError):
        pass  # what is left goes to coreutils
    if _is_empty(folder, spare):
        return True
    but = [] if spare is None else ["!", "-name", spare]
    for tool in (["chmod", "-R", "u+rwx"], ["rm", "-rf", "--one-file-system"]):
        try:
            subprocess.run(["find", folder, "-mindepth", "1", "-maxdepth", "1", *but,
                            "-exec", *tool, "--", "{}", "+"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, env=_TOOLS_ENV, check=False)
        except OSError:
            return False  # no findutils here
    return _is_empty(folder, spare)


def _remove_entries(folder: str, spare: str | None) -> None:
    """What :func:`shutil.rmtree` can remove of ``folder``'s contents (fast, no process)."""
    with os.scandir(folder) as entries:
        names = [(e.path, e.is_dir(follow_symlinks=False)) for e in entries
                 if e.name != spare]
    for path, is_dir in names:
        if is_dir:
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def _is_empty(folder: str, spare: str | None) -> bool:
    try:
        with os.scandir(folder) as entries:
            return all(e.name == spare for e in entries)
    except FileNotFoundError:
        return True
    except OSError:
        return False
