"""What ex06's peak probe (:mod:`autograder.peak_probe`) runs: its own program
(:data:`RUNNER`, run in the sandbox as ``python -I -c RUNNER``), the notebook's cells it is
handed (the setup cells, the solution cells, the modules they import) and its sandboxed
command line, with the allocator set up so that resident memory follows live memory."""

from __future__ import annotations

import ast
import sys

from autograder import bwrap_box
from autograder.bwrap_box import Box, remount_ro, tmpfs
from autograder.config import SOLUTIONS
from autograder.sandbox import bwrap, sandbox_error, system_binds
from autograder.verdicts import nbgrader_meta

MAX_IMPORTS = 64
# Each block of at least 128 KiB gets its own mapping and is unmapped when freed: resident
# memory follows the live allocations, not glibc's heap (whose trim threshold rises).
GLIBC_TUNABLES = "glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072"


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


ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp",
       "PYTHONDONTWRITEBYTECODE": "1", "MPLCONFIGDIR": "/tmp/matplotlib",
       "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
       "NUMPY_MADVISE_HUGEPAGE": "0", "GLIBC_TUNABLES": GLIBC_TUNABLES}


def command() -> tuple[list[str], bool]:
    """(the probe's command line, whether it is sandboxed)."""
    py = [sys.executable, "-I", "-c", RUNNER]
    if sandbox_error() is not None:
        return py, False
    box = Box(mounts=(*tmpfs("/dev/shm"), *tmpfs("/tmp"), *system_binds(gpu=False), *remount_ro("/")),
              chdir="/tmp", env=ENV)
    return bwrap_box.command(bwrap(), box, py), True

