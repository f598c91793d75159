"""A learner's cells run again in a Python that has the standard library and nothing else.

"Pure Python: no numpy or torch" (ex01) is enforced by construction, not by reading code:
the notebook's setup and solution cells (where the contract puts the graded functions and
their helpers; not the tests, nor cells of the learner's own) are run, one after another
and each on its own (a cell that raises stops only itself, as in a
notebook), in a fresh ``python -I -S`` inside a bubblewrap sandbox in which every
site-packages folder is an empty tmpfs, so no array library exists to be imported,
whatever the code does to ``sys.path``; every attempt to import one is recorded (a cell that
uses numpy when it is installed and plain Python otherwise is found). The calls the checker
asks for are made there and their results sent back as JSON on stdout. Without bubblewrap (``grade --no-sandbox``)
the probe is the same interpreter with ``-I -S``, which a determined learner can undo.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import sysconfig
import threading
from concurrent.futures import Future
from pathlib import Path

from autograder import bwrap_box, limits
from autograder.bwrap_box import Box, remount_ro, tmpfs
from autograder.sandbox import bwrap, sandbox_error, system_binds

TIMEOUT = 60
MAX_OUTPUT = 4 * 2**20

# At most one run started ahead by prefetch() (``check``: one notebook), by its request.
_PREFETCHED: dict[str, Future] = {}
_PREFETCHED_LOCK = threading.Lock()

# Run with -I -S -c in the sandbox: standard library only. Reads {"cells", "calls"} on
# stdin, writes a list of replies on stdout (the wire module's plain nodes for lists and
# numbers; anything else as an opaque type name).
RUNNER = r'''
import json, sys
request = json.loads(sys.stdin.read())
out = sys.stdout
sys.stdout = sys.stderr
tried = []


class _Watch:  # the array libraries the cells try to import (none is installed here)
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in request["banned"] and name not in tried:
            tried.append(name)
        return None


sys.meta_path.insert(0, _Watch)
ns = {"__name__": "__main__"}
for source in request["cells"]:
    code = "\n".join(l for l in source.splitlines() if not l.lstrip().startswith(("%", "!")))
    try:
        exec(compile(code, "<cell>", "exec"), ns)
    except BaseException:
        pass

def enc(v, depth=0):
    t = type(v)
    if depth > 40:
        return {"t": "opaque", "type": "too-deeply-nested"}
    if v is None or t is bool or t is str:
        return {"t": "plain", "v": v}
    if t is int:
        return {"t": "int", "v": str(v)}
    if t is float:
        return {"t": "float", "v": repr(v)}
    if t in (list, tuple):
        return {"t": t.__name__, "v": [enc(x, depth + 1) for x in v]}
    return {"t": "opaque", "type": t.__name__}

replies = []
for name, args in request["calls"]:
    try:
        fn = ns[name]
        replies.append({"value": enc(fn(*args))})
    except BaseException as exc:
        kinds = [k for k in ("NotImplementedError", "ValueError", "ImportError", "NameError",
                             "TypeError", "Exception") if isinstance(exc, getattr(__builtins__, k))]
        replies.append({"raised": {"type": type(exc).__name__, "kinds": kinds,
                                   "message": str(exc)[:2000]}})
out.write(json.dumps({"replies": replies, "tried": tried}))
'''


def _package_folders() -> list[str]:
    """Every folder third-party packages can be imported from, for this Python."""
    found = set(site.getsitepackages() + [site.getusersitepackages()])
    for key in ("purelib", "platlib"):
        found.add(sysconfig.get_paths()[key])
    found |= {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    found.add("/usr/lib/python3/dist-packages")
    return sorted(p for p in found if os.path.isdir(p))


def command() -> list[str]:
    """The probe's command line: sandboxed where bubblewrap can start."""
    py = [sys.executable, "-I", "-S", "-c", RUNNER]
    if sandbox_error() is not None:
        return py
    mounts = [*tmpfs("/tmp"), *system_binds()]
    for folder in _package_folders():
        mounts += tmpfs(folder)
    box = Box(mounts=(*mounts, *remount_ro("/")), chdir="/tmp",
              env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    return bwrap_box.command(bwrap(), box, py)


def _request(cells: list[str], calls: list[tuple[str, tuple]], banned: tuple[str, ...]) -> str:
    return json.dumps({"cells": cells, "calls": [[n, list(a)] for n, a in calls],
                       "banned": list(banned)})


def prefetch(cells: list[str], calls: list[tuple[str, tuple]], banned: tuple[str, ...] = (),
             timeout: float = TIMEOUT) -> None:
    """Start :func:`run` of these arguments in a background thread: ``check`` calls this
    (through a checks module's ``prefetch``) from the notebook's source while the kernel
    starts, and the test's :func:`run` with the same request waits for this one instead of
    starting its own. A run for another request is not affected."""
    request = _request(cells, calls, banned)
    future: Future = Future()
    with _PREFETCHED_LOCK:
        _PREFETCHED.clear()
        _PREFETCHED[request] = future

    def run_ahead() -> None:
        try:
            future.set_result(_run(request, len(calls), timeout))
        except BaseException as exc:  # noqa: BLE001 - the test runs the probe itself then
            future.set_exception(exc)

    threading.Thread(target=run_ahead, daemon=True, name="stdlib-probe").start()


def run(cells: list[str], calls: list[tuple[str, tuple]], banned: tuple[str, ...] = (),
        timeout: float = TIMEOUT) -> tuple[list, list]:
    """(the replies of ``calls`` (name, args), the modules of ``banned`` the cells tried to
    import) after ``cells`` ran in the probe (at most ``timeout`` seconds for all of it)."""
    request = _request(cells, calls, banned)
    with _PREFETCHED_LOCK:
        future = _PREFETCHED.pop(request, None)
    if future is not None:
        try:
            return future.result()  # bounded: the run itself stops within the backstop
        except Exception:  # noqa: BLE001, S110 - run it again, here
            pass
    return _run(request, len(calls), timeout)


def _run(request: str, n_calls: int, timeout: float) -> tuple[list, list]:
    """The probe run on ``request`` (JSON), for :func:`run`."""
    def failed(kind: str, why: str) -> tuple[list, list]:
        return [{"raised": {"type": kind, "kinds": ["Exception"], "message": why}}] * n_calls, []

    try:
        done = subprocess.run(limits.limited(command(), timeout), input=request.encode(),
                              capture_output=True, timeout=limits.backstop(timeout),
                              cwd=Path("/"))
    except subprocess.TimeoutExpired:
        return failed("TimeoutError", f"the cells waited longer than "
                      f"{limits.backstop(timeout):g} s")
    if limits.out_of_cpu(done.returncode):
        return failed("TimeoutError", f"the cells ran longer than {timeout:g} s of CPU time")
    text = done.stdout[:MAX_OUTPUT + 1]
    try:
        answer = json.loads(text.decode("utf-8")) if len(text) <= MAX_OUTPUT else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        answer = None
    if type(answer) is not dict or type(answer.get("replies")) is not list or len(
            answer["replies"]) != n_calls or type(answer.get("tried")) is not list:
        return failed("ProbeFailed", f"the process ended with status {done.returncode} and "
                      "no answer")
    return answer["replies"], answer["tried"]
