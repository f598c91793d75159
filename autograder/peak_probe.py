"""The peak memory of one call of a learner's function, measured by the grader from outside.

ex06's rule, "the peak memory the call allocates, by any library, stays under 16 MiB", is
judged in a fresh process the learner's kernel never sees, in memory cgroups the grader
makes for it, read by the grader itself:

1. A new sandboxed Python (bubblewrap: no network, its own processes and ``/tmp``, a
   read-only root, no GPU, ``/sys`` not mounted, so no cgroup file can be reached from
   inside) starts in cgroup ``setup``. It runs the instructor's setup cells, imports every
   module the solution cells name (library code only: a library imported by a solution
   cell is not the call's memory), makes the call's inputs, warms NumPy's code and BLAS
   buffers up with the grader's own products, collects garbage and hands free heap memory
   back to the system (``malloc_trim``). Then it says ``ready`` and waits.
2. The grader moves the probe's processes into a new, empty cgroup ``call`` (charges are
   not moved with them: what the setup made resident stays charged to ``setup``).
3. The probe runs the learner's solution cells and then the measured call. Its processes
   and every child they start are in ``call``: each page they make resident from now on,
   anonymous, shared (``mmap``, tmpfs files in ``/tmp`` or ``/dev/shm``), file-backed or
   the kernel's own (page tables), is charged there, whichever library or process touched
   it, and stays counted in the cgroup's high-water mark (``memory.max_usage_in_bytes``,
   cgroup v2 ``memory.peak``) after it is freed or its process has exited.
4. When every process of the probe has exited, the grader reads that high-water mark: the
   peak. Nothing is sampled, so no result depends on timing, and nothing inside the
   sandbox can lower the counter (``/proc/self/clear_refs``, ``malloc_trim`` and
   ``tracemalloc`` act on other counters).

So memory made resident before the call by the learner's own code counts: a buffer a
solution cell allocates and touches (the solution cells run after the baseline), a child
process, a shared or file mapping. The learner's other cells (their experiments) do not
run here at all, so a big array an honest learner kept from their own work costs nothing;
a function that needs a name only such a cell defines fails here (the contract: each
graded function and its helpers in its own solution cell).

The allocator is set up so that resident memory follows live memory: glibc hands every
block of 128 KiB or more back when it is freed (``GLIBC_TUNABLES``), transparent huge
pages are off (``PR_SET_THP_DISABLE``, ``NUMPY_MADVISE_HUGEPAGE=0``), BLAS runs one
thread (``OPENBLAS_NUM_THREADS=1``), and the probe is pinned to one CPU (the kernel's
per-CPU charge caches make the counter exceed the pages by at most 64 pages per CPU).
A learner can undo any of these, which only makes their own peak larger.

Where no memory cgroup can be made (not root and no delegated cgroup v2 subtree; see
:func:`autograder.cgroups.cgroup_error`), the probe measures inside itself instead
(:func:`autograder.memory.peak_call_memory`): an *estimate* for the learner, which a child
process or a reset of the high-water mark can escape; :attr:`Measured.how` says which.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder import limits
from autograder import memory
from autograder.cgroups import LIMIT_BYTES, Cgroups, writable_hierarchy
from autograder.config import SOLUTIONS
from autograder.sandbox import bwrap, sandbox_error, system_binds
from autograder.verdicts import nbgrader_meta

MIB = 2**20
MAX_HEADER = 64 * 2**10  # the probe's answer: one JSON line, then the rows it sends
MAX_ROWS_BYTES = 8 * MIB
MAX_IMPORTS = 64
# Each block of at least 128 KiB gets its own mapping and is unmapped when freed: resident
# memory follows the live allocations, not glibc's heap (whose trim threshold rises).
GLIBC_TUNABLES = "glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072"


# --- the probe's own program (runs in the sandbox, as ``python -I -c RUNNER``) ------------

RUNNER = r'''
import json, os, sys
_out = os.fdopen(os.dup(1), "wb", buffering=0)  # to the grader; fd 1 itself goes to stderr
os.dup2(2, 1)
sys.stdout = sys.stderr
try:
    import ctypes
    ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)  # PR_SET_THP_DISABLE: 4 KiB pages only
except Exception:
    pass
request = json.loads(sys.stdin.readline())


def run_cells(cells, ns):
    for source in cells:
        code = "\n".join(l for l in source.splitlines() if not l.lstrip().startswith(("%", "!")))
        try:
            exec(compile(code, "<cell>", "exec"), ns)
        except BaseException:  # a cell that raises stops only itself, as in a notebook
            pass


ns = {"__name__": "__main__"}
run_cells(request["setup"], ns)
import importlib
for name in request["imports"]:
    try:
        importlib.import_module(name)
    except BaseException:
        pass
import gc
import numpy as np
rng = np.random.default_rng(request["seed"])
args = [rng.normal(size=tuple(shape)) for shape in request["shapes"]]
kwargs = request["kwargs"]
try:
    exec(request["warmup"], {"np": np, "args": args, "kwargs": kwargs})
except Exception:
    pass
estimate = None
if request["estimate"]:  # no cgroup: autograder.memory's in-process measure, in this process
    estimate = {"__name__": "autograder_memory_estimate"}
    exec(compile(request["estimate"], "<autograder.memory>", "exec"), estimate)
gc.collect()
try:
    ctypes.CDLL(None).malloc_trim(0)
except Exception:
    pass
_out.write(b"ready\n")
if sys.stdin.readline() != "go\n":
    os._exit(3)
sys.stdin.close()

run_cells(request["cells"], ns)
reply, data, whole = {}, b"", None
try:
    fn = ns[request["name"]]
except KeyError:
    reply = {"missing": True}
else:
    try:
        if estimate is not None:
            out, peak, how = estimate["peak_call_memory"](fn, *args, **kwargs)
            reply["estimate"] = {"peak": int(peak), "how": str(how)}
        else:
            out = fn(*args, **kwargs)
        cls = type(out)
        value = {"type": cls.__name__[:200], "ndarray": np.ndarray in cls.__mro__}
        if value["ndarray"]:
            plain = np.ndarray.view(out, np.ndarray)
            value["shape"] = [int(n) for n in plain.shape][:32]
            value["dtype"] = str(plain.dtype)[:100]
            rows = request["rows"]
            if rows is None and plain.dtype == np.float64 and plain.ndim == 2 and \
                    plain.size * 8 <= request["max_bytes"]:
                whole = plain  # sent as it is, 64 rows at a time: no copy of it here
                value["nbytes"] = plain.size * 8
            elif rows and plain.dtype == np.float64 and plain.ndim == 2 and \
                    plain.shape[0] > max(rows):
                data = np.ascontiguousarray(plain[rows]).tobytes()
        value.setdefault("nbytes", len(data))
        reply["value"] = value
    except BaseException as exc:
        import builtins
        kinds = [k for k in ("NotImplementedError", "ValueError", "TypeError", "NameError",
                             "MemoryError", "ImportError", "KeyboardInterrupt", "Exception")
                 if isinstance(exc, getattr(builtins, k))]
        try:
            message = str(exc)[:2000]
        except BaseException:
            message = "(its message could not be read)"
        reply = {"raised": {"type": type(exc).__name__[:200], "kinds": kinds,
                            "message": message}}
_out.write(json.dumps(reply).encode() + b"\n" + data)
if whole is not None:
    for i in range(0, whole.shape[0], 64):
        _out.write(np.ascontiguousarray(whole[i:i + 64]).data)
_out.close()
os._exit(0)  # no atexit handler or thread of the learner's runs after the answer
'''


def mode() -> str:
    """``cgroup v1``, ``cgroup v2`` or ``in-process estimate``: how peaks are measured here."""
    found, _why = writable_hierarchy()
    return f"cgroup v{found.version}" if found is not None else "in-process estimate"


# --- the probe --------------------------------------------------------------------------

@dataclass
class Measured:
    """What the probe measured of one call.

    ``peak``: bytes (None when the call did not complete); ``how``: how it was measured;
    ``value``: the result's ``type`` name, ``ndarray`` (bool), ``shape``, ``dtype`` and
    ``rows`` (the whole result, or the requested rows, as a float64 array, when it is a 2-D
    float64 array);
    ``raised``: the exception the call raised (``type``, ``kinds``, ``message``);
    ``missing``: the solution cells define no such name; ``error``: why the probe gave no
    answer (time limit, memory limit, a broken answer); ``baseline``: bytes resident in
    the probe when the learner's code began (cgroup only)."""

    how: str
    peak: int | None = None
    value: dict = field(default_factory=dict)
    raised: dict | None = None
    missing: bool = False
    error: str = ""
    baseline: int | None = None
    seconds: float = 0.0


def setup_cells(assignment: str) -> list[str]:
    """The setup cells (locked instructor code that is no test) of ``assignment``'s source
    notebook in ``solutions/``: the only code the probe runs before its baseline."""
    import nbformat

    nb = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code" and
            (meta := nbgrader_meta(c)).get("locked") and not meta.get("grade")
            and not meta.get("solution")]


def solution_cells(nb) -> list[str]:
    """The solution cells of the notebook being graded, in order (where the contract puts
    the graded functions and their helpers; not the learner's other cells)."""
    cells = nb.cells if nb is not None else []
    return [c.source for c in cells if c.cell_type == "code" and nbgrader_meta(c).get("solution")]


def imported_modules(cells: list[str]) -> list[str]:
    """Module names the cells' ``import`` statements name (anywhere in them, functions too;
    for ``from a import b`` both ``a`` and ``a.b``, which may be a submodule)."""
    names: list[str] = []
    for source in cells:
        code = "\n".join(ln for ln in source.splitlines()
                         if not ln.lstrip().startswith(("%", "!")))
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.append(node.module)
                names += [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
    return list(dict.fromkeys(names))[:MAX_IMPORTS]


def _probe_binds() -> list[str]:
    """The sandbox's system binds without GPU devices (GPU memory is in no cgroup)."""
    binds, out, i = system_binds(), [], 0
    while i < len(binds):
        if binds[i] == "--dev-bind-try":
            i += 3
            continue
        out.append(binds[i])
        i += 1
    return out


ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp",
       "PYTHONDONTWRITEBYTECODE": "1", "MPLCONFIGDIR": "/tmp/matplotlib",
       "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
       "NUMPY_MADVISE_HUGEPAGE": "0", "GLIBC_TUNABLES": GLIBC_TUNABLES}


def command() -> tuple[list[str], bool]:
    """(the probe's command line, whether it is sandboxed)."""
    py = [sys.executable, "-I", "-c", RUNNER]
    if sandbox_error() is not None:
        return py, False
    box = [bwrap(), "--unshare-all", "--die-with-parent", "--cap-drop", "ALL",
           "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm", "--tmpfs", "/tmp",
           *_probe_binds(), "--remount-ro", "/", "--chdir", "/tmp", "--clearenv"]
    for k, v in ENV.items():
        box += ["--setenv", k, v]
    return [*box, "--", *py], True


def _cpu() -> int | None:
    """The one CPU the probe runs on (one of this process's, spread over the workers)."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    return cpus[os.getpid() % len(cpus)] if cpus else None


class _Pipes:
    """Reads the probe's stdout (kept) and stderr (its last 4 KiB) until a deadline."""

    def __init__(self, proc: subprocess.Popen, deadline: float):
        self.proc, self.deadline = proc, deadline
        self.out, self.err = bytearray(), bytearray()
        self.open = {proc.stdout.fileno(): self.out, proc.stderr.fileno(): self.err}
        for fd in self.open:
            os.set_blocking(fd, False)

    def read_until(self, done) -> bool:
        """Read until ``done(out)`` holds or stdout ends (True), or time is up (False)."""
        while not done(self.out) and self.proc.stdout.fileno() in self.open:
            left = self.deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select(list(self.open), [], [], min(left, 1.0))
            for fd in ready:
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    del self.open[fd]
                    continue
                buf = self.open[fd]
                buf += chunk
                if buf is self.err and len(buf) > 4096:
                    del buf[:-4096]
                if buf is self.out and len(buf) > MAX_HEADER + MAX_ROWS_BYTES + 16:
                    raise _Broken("the probe wrote more than its answer can hold")
        return True

    def stderr_tail(self) -> str:
        return bytes(self.err[-300:]).decode("utf-8", "replace").strip()


class _Broken(Exception):
    """The probe's answer is not one its program writes."""


def _header(out: bytearray) -> dict:
    line = bytes(out[:out.index(b"\n")]) if b"\n" in out else b""
    try:
        reply = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _Broken("its answer is not JSON") from None
    if type(reply) is not dict:
        raise _Broken("its answer is not a JSON object")
    return reply


def _answer(out: bytearray, rows: list[int] | None, measured: Measured) -> None:
    """Fill ``measured`` from the probe's answer (checked before it is read)."""
    reply = _header(out)
    data = bytes(out[out.index(b"\n") + 1:])
    if reply.get("missing") is True:
        measured.missing = True
        return
    if "raised" in reply:
        raised = reply["raised"]
        if type(raised) is not dict:
            raise _Broken("a malformed report of an exception")
        measured.raised = {"type": str(raised.get("type", ""))[:200],
                           "kinds": [str(k)[:40] for k in raised.get("kinds", [])
                                     if type(k) is str][:20]
                           if type(raised.get("kinds")) is list else [],
                           "message": str(raised.get("message", ""))[:2000]}
        return
    value = reply.get("value")
    if type(value) is not dict or type(value.get("type")) is not str or \
            type(value.get("ndarray")) is not bool or type(value.get("nbytes")) is not int:
        raise _Broken("a malformed description of the result")
    measured.value = {"type": value["type"][:200], "ndarray": value["ndarray"]}
    if value["ndarray"]:
        shape, dtype = value.get("shape"), value.get("dtype")
        if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape) or \
                type(dtype) is not str:
            raise _Broken("a malformed shape or dtype")
        measured.value.update(shape=tuple(shape), dtype=dtype[:100])
    if value["nbytes"]:
        import numpy as np

        shape = measured.value.get("shape", (0, 0))
        width = shape[1:2] or (0,)
        count = shape[0] if rows is None and len(shape) == 2 else len(rows or ())
        if value["nbytes"] != len(data) or len(data) != count * width[0] * 8 or \
                measured.value.get("dtype") != "float64":
            raise _Broken("the rows it sent are not the rows asked for")
        measured.value["rows"] = np.frombuffer(data, dtype="<f8").reshape(count, width[0])
    elif data:
        raise _Broken("bytes after its answer")
    estimate = reply.get("estimate")
    if estimate is not None:
        if type(estimate) is not dict or type(estimate.get("peak")) is not int:
            raise _Broken("a malformed estimate")
        measured.peak = estimate["peak"]
        measured.how += f", by {str(estimate.get('how'))[:40]}"


_WARNED: list[str] = []


def measure_call(setup: list[str], cells: list[str], name: str, shapes: list[tuple[int, ...]],
                 kwargs: dict, *, seed: int, rows: list[int] | None = None, warmup: str = "",
                 timeout: float = 60.0) -> Measured:
    """Run ``cells`` after ``setup`` in a fresh probe and measure ``name(*args, **kwargs)``
    there, ``args`` being float64 standard normal arrays of ``shapes`` drawn with ``seed``
    (``numpy.random.default_rng(seed).normal``, one array after another); ``warmup`` is
    the grader's own code run before the baseline (names ``np``, ``args``, ``kwargs``).
    The result comes back whole when it is a 2-D float64 array of at most
    :data:`MAX_ROWS_BYTES` (``rows`` None, the default; sent from the array itself, so the
    probe makes no copy of it), or only its ``rows``. At most ``timeout``
    seconds for all of it."""
    found, why = writable_hierarchy()
    groups: Cgroups | None = None
    cmd, boxed = command()
    if found is not None:
        try:
            groups = Cgroups(found)
        except OSError as exc:
            found, why = None, f"the probe's cgroup could not be made: {exc}"
    if groups is not None:
        how = f"cgroup v{found.version}" + ("" if boxed else ", not sandboxed")
    else:
        how = f"an in-process estimate (no memory cgroup: {why})"
        if not _WARNED:
            _WARNED.append(why)
            logging.getLogger(__name__).warning(
                "peak memory is estimated inside the learner's process, which a child "
                "process or a reset high-water mark escapes: no memory cgroup (%s)", why)
    measured = Measured(how=how)
    request = {"setup": setup, "cells": cells, "name": name, "imports": imported_modules(cells),
               "shapes": [list(s) for s in shapes], "kwargs": kwargs, "seed": seed,
               "rows": None if rows is None else list(rows), "warmup": warmup,
               "max_bytes": MAX_ROWS_BYTES,
               "estimate": "" if groups is not None else Path(memory.__file__).read_text()}
    start = time.monotonic()
    deadline = start + limits.backstop(timeout)  # the CPU time: its rlimit
    env = None if boxed else {**ENV, "PATH": os.environ.get("PATH", ENV["PATH"])}
    proc = None
    try:
        # The shell waits for its first line until it is in its cgroup and pinned, then
        # becomes the probe: everything the probe starts is in the cgroup from its first
        # page (a shell that cannot read its line exits, it never runs the probe outside).
        proc = subprocess.Popen(
            limits.limited(["/bin/sh", "-c", 'read _ || exit 97; exec "$@"', "sh", *cmd],
                           timeout),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd="/tmp" if not boxed else "/", env=env, start_new_session=True)
        if groups is not None:
            groups.add(proc.pid)
        cpu = _cpu()
        if cpu is not None:
            try:
                os.sched_setaffinity(proc.pid, {cpu})
            except OSError:
                pass
        pipes = _Pipes(proc, deadline)
        try:
            proc.stdin.write(b"go\n" + json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
        except OSError:
            pass
        if not pipes.read_until(lambda out: b"\n" in out) or b"\n" not in pipes.out:
            measured.error = _stopped(proc, pipes, timeout, "before the learner's cells ran")
            return measured
        if bytes(pipes.out) != b"ready\n":
            raise _Broken("it did not say it was ready")
        del pipes.out[:]
        if groups is not None:
            measured.baseline = groups.usage(groups.setup)
            groups.move_to_call()
        try:
            proc.stdin.write(b"go\n")
            proc.stdin.close()
        except OSError:
            pass
        finished = pipes.read_until(lambda out: False)  # until stdout ends
        try:
            proc.wait(max(0.0, deadline - time.monotonic()) + 1)
        except subprocess.TimeoutExpired:
            finished = False
        if not finished:
            measured.error = _stopped(proc, pipes, timeout, "")
        if groups is not None:
            groups.kill_all()  # nothing is left once the sandbox's first process ended
            measured.peak = groups.peak()
            if groups.oom_kills():
                measured.error = (f"the probe ran out of memory (its limit is "
                                  f"{LIMIT_BYTES // MIB} MiB)")
                return measured
        if measured.error:
            return measured
        if limits.out_of_cpu(proc.returncode):
            measured.error = f"the probe ran longer than {timeout:g} s of CPU time"
            return measured
        if b"\n" not in pipes.out:
            measured.error = (f"the probe ended (status {proc.returncode}) without an answer"
                              + (f": {pipes.stderr_tail()}" if pipes.stderr_tail() else ""))
            return measured
        _answer(pipes.out, None if rows is None else list(rows), measured)
        if groups is None and measured.peak is None and measured.value:
            raise _Broken("no estimate came with the result")
        return measured
    except _Broken as exc:
        measured.error = f"the probe's answer could not be read: {exc}"
        return measured
    except OSError as exc:  # the cgroup files or the pipes failed the grader
        measured.error = f"the grader could not measure the probe: {exc}"
        return measured
    finally:
        if proc is not None:
            _end(proc)
        if groups is not None:
            groups.close()
        measured.seconds = time.monotonic() - start


def _stopped(proc: subprocess.Popen, pipes: _Pipes, timeout: float, when: str) -> str:
    if proc.poll() is None:
        _end(proc)
        return (f"the probe waited longer than {limits.backstop(timeout):g} s"
                f"{' ' + when if when else ''}")
    if limits.out_of_cpu(proc.returncode):
        return f"the probe ran longer than {timeout:g} s of CPU time{' ' + when if when else ''}"
    tail = pipes.stderr_tail()
    return (f"the probe ended (status {proc.returncode}) {when or 'before it answered'}"
            + (f": {tail}" if tail else ""))


def _end(proc: subprocess.Popen) -> None:
    """Kill the probe (bubblewrap: its sandbox and every process in it go with it)."""
    if proc.poll() is None:
        try:
            proc.kill()
        except OSError:
            pass
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        pass
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
