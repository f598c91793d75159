"""A learner's cells run again in a Python that has the standard library and nothing else.

"Pure Python: no numpy or torch" (ex01) is enforced by construction, not by reading code:
the learner's code cells (every code cell of the notebook but the tests) are run, one
after another and each on its own (a cell that raises stops only itself, as in a
notebook), in a fresh ``python -I -S`` inside a bubblewrap sandbox in which every
site-packages folder is an empty tmpfs, so no array library exists to be imported,
whatever the code does to ``sys.path``. The calls the checker asks for are made there and
their results sent back as JSON on stdout. Without bubblewrap (``grade --no-sandbox``)
the probe is the same interpreter with ``-I -S``, which a determined learner can undo.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

TIMEOUT = 60
MAX_OUTPUT = 4 * 2**20

# Run with -I -S -c in the sandbox: standard library only. Reads {"cells", "calls"} on
# stdin, writes a list of replies on stdout (the wire module's plain nodes for lists and
# numbers; anything else as an opaque type name).
RUNNER = r'''
import json, sys
request = json.loads(sys.stdin.read())
out = sys.stdout
sys.stdout = sys.stderr
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
out.write(json.dumps(replies))
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
    from autograder.sandbox import _system_binds, bwrap, sandbox_error

    py = [sys.executable, "-I", "-S", "-c", RUNNER]
    if sandbox_error() is not None:
        return py
    box = [bwrap(), "--unshare-all", "--die-with-parent", "--cap-drop", "ALL",
           "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", *_system_binds()]
    for folder in _package_folders():
        box += ["--tmpfs", folder]
    return [*box, "--remount-ro", "/", "--chdir", "/tmp", "--clearenv",
            "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8", "--", *py]


def run(cells: list[str], calls: list[tuple[str, tuple]]) -> list:
    """The replies of ``calls`` (name, args) after ``cells`` ran in the probe."""
    request = json.dumps({"cells": cells, "calls": [[n, list(a)] for n, a in calls]})
    try:
        done = subprocess.run(command(), input=request.encode(), capture_output=True,
                              timeout=TIMEOUT, cwd=Path("/"))
    except subprocess.TimeoutExpired:
        return [{"raised": {"type": "TimeoutError", "kinds": ["Exception"],
                            "message": f"the cells ran longer than {TIMEOUT} s"}}] * len(calls)
    text = done.stdout[:MAX_OUTPUT + 1]
    try:
        replies = json.loads(text.decode("utf-8")) if len(text) <= MAX_OUTPUT else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        replies = None
    if type(replies) is not list or len(replies) != len(calls):
        why = f"the process ended with status {done.returncode} and no answer"
        return [{"raised": {"type": "ProbeFailed", "kinds": ["Exception"], "message": why}}
                ] * len(calls)
    return replies


# The memory probe (ex06): Python with the course's libraries, the setup and solution cells,
# then one call whose memory the grader measures from outside. Lines on stdout: "ready"
# (numpy imported: the baseline), "loaded" (cells run, inputs read: the grader resets the
# high-water marks, after one unmeasured call and a trim of the freed heap), "done" (the
# reply written: the grader reads the marks).
MEMORY_RUNNER = r'''
import json, sys, os
out = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
import numpy as np
from autograder import wire
request = json.loads(sys.stdin.readline())
out.write("ready\n"); out.flush()
sys.stdin.readline()
ns = {"__name__": "__main__"}
for source in request["cells"]:
    code = "\n".join(l for l in source.splitlines() if not l.lstrip().startswith(("%", "!")))
    try:
        exec(compile(code, "<cell>", "exec"), ns)
    except BaseException:
        pass
folder = request["folder"]
args = wire.decode(request["args"], wire.Arrays(folder, "in"))
kwargs = wire.decode(request["kwargs"], wire.Arrays(folder, "in"))
try:  # a first call, unmeasured: library code and buffers settle (learner state stays)
    ns[request["name"]](*args, **kwargs)
except BaseException:
    pass
import ctypes, gc
gc.collect()
try:
    ctypes.CDLL(None).malloc_trim(0)
except (OSError, AttributeError):
    pass
out.write("loaded\n"); out.flush()
sys.stdin.readline()
try:
    result = ns[request["name"]](*args, **kwargs)
    reply = {"value": wire.encode(result, wire.Arrays(folder, "out"))}
except BaseException as exc:
    reply = {"raised": {"type": type(exc).__name__, "message": str(exc)[:2000],
             "kinds": [k for k in ("NotImplementedError", "ValueError", "MemoryError",
                                   "Exception") if isinstance(exc, getattr(__builtins__, k))]}}
wire.dump(reply, os.path.join(folder, "reply.json"))
out.write("done\n"); out.flush()
sys.stdin.readline()
'''


def measured_call(cells: list[str], name: str, args, kwargs, status) -> tuple[dict, int, Path]:
    """Run ``cells`` and then ``name(*args, **kwargs)`` in a fresh sandboxed Python and
    measure the call's peak memory from outside: (reply, peak bytes, exchange folder).

    ``status(pid, field)`` reads a ``kB`` field of /proc/PID/status. The peak is the sum
    of the probe's processes' high-water marks after the call, less their resident memory
    once NumPy was imported (before any learner code) and less the inputs' bytes."""
    import tempfile

    from autograder import wire
    from autograder.sandbox import PACKAGE, _descendants, _system_binds, bwrap, sandbox_error

    folder = Path(tempfile.mkdtemp(prefix="autograder-probe-"))
    arrays = wire.Arrays(folder, "in")
    request = {"cells": cells, "name": name, "folder": str(folder),
               "args": wire.encode(tuple(args), arrays), "kwargs": wire.encode(dict(kwargs), arrays)}
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONPATH": str(PACKAGE.parent),
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "HOME": "/tmp",
           # glibc: every block of 64 KiB or more its own mapping, given back when freed (no
           # dynamic threshold), so the resident set follows what is live, not what was.
           "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "131072"}
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if k in os.environ:
            env[k] = os.environ[k]
    py = [sys.executable, "-c", MEMORY_RUNNER]
    if sandbox_error() is None:
        # The course package read-only at its own path (its wire module), the exchange
        # folder writable; nothing else of the course's.
        box = [bwrap(), "--unshare-all", "--die-with-parent", "--cap-drop", "ALL",
               "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", *_system_binds(),
               "--ro-bind", str(PACKAGE / "wire.py"), str(PACKAGE / "wire.py"),
               "--ro-bind", str(PACKAGE / "__init__.py"), str(PACKAGE / "__init__.py"),
               "--ro-bind", str(PACKAGE / "exercises.py"), str(PACKAGE / "exercises.py"),
               "--ro-bind", str(PACKAGE / "config.py"), str(PACKAGE / "config.py"),
               "--bind", str(folder), str(folder), "--remount-ro", "/proc", "--clearenv"]
        for k, v in env.items():
            box += ["--setenv", k, v]
        cmd, run_env = [*box, "--", *py], None
    else:
        cmd, run_env = py, env
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=run_env, text=True)

    def pids() -> list[int]:
        return [p for p in [proc.pid, *_descendants(proc.pid)] if _comm(p) != "bwrap"]

    try:
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        _expect(proc, "ready")
        baseline = sum(status(p, "VmRSS") for p in pids())
        proc.stdin.write("\n")
        proc.stdin.flush()
        _expect(proc, "loaded")
        for p in pids():
            with open(f"/proc/{p}/clear_refs", "w", encoding="ascii") as f:
                f.write("5")
        proc.stdin.write("\n")
        proc.stdin.flush()
        _expect(proc, "done")
        peak = sum(status(p, "VmHWM") for p in pids())
        reply = wire.load(folder / "reply.json")
    finally:
        proc.kill()
        proc.wait()
    inputs = sum(getattr(a, "nbytes", 0) for a in (*args, *kwargs.values()))
    return reply, max(0, (peak - baseline) * 1024 - inputs), folder


def _expect(proc, word: str) -> None:
    import select

    ready, _, _ = select.select([proc.stdout], [], [], TIMEOUT)
    line = proc.stdout.readline().strip() if ready else ""
    if line != word:
        from autograder.wire import WireError

        raise WireError(f"the memory probe stopped before '{word}' ({line[:80]!r})")


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""
