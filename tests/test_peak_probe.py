"""autograder.peak_probe: ex06's peak memory measured by the grader, in a memory cgroup (issue 23).

Each measurement runs the setup cells, then the given solution cells and one call, in a
fresh probe whose memory cgroup the grader reads: no sampling, so every bound below holds
however loaded the machine is. Tests that need a cgroup skip, with the reason, where none
can be made; on a machine where this process is root and the cgroup v1 memory controller
is writable (the course's own machines), :func:`test_this_machine_measures_in_a_cgroup`
makes sure they ran.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from autograder import cgroups, peak_probe, peak_probe_answer, peak_probe_program
from autograder.remote import Remote
from autograder.checks import ex06
from autograder.measure import peak_traced_memory
from autograder.testing import CheckFailed

MIB = 2**20
A = "ex06_tiled_attention"
T, D = 4096, 64
ROWS = list(range(64)) + list(range(T - 64, T))
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux cgroups")
needs_cgroup = pytest.mark.skipif(cgroups.cgroup_error() is not None,
                                  reason=f"no memory cgroup here: {cgroups.cgroup_error()}")


def _reference_cells() -> list[str]:
    import nbformat

    from autograder.config import SOLUTIONS

    nb = nbformat.read(SOLUTIONS / A / f"{A}.ipynb", as_version=4)
    return peak_probe_program.solution_cells(nb)


SETUP = peak_probe_program.setup_cells(A)


def _measure(cells: list[str], name: str = "tiled_attention", is_causal: bool = False,
             shapes=((T, D),) * 3, timeout: float = 120.0) -> peak_probe_answer.Measured:
    """``name(Q, K, V, block_size=64, is_causal=...)`` for ex06's shapes, else
    ``name(*arrays)`` for small ones."""
    kwargs = {"block_size": 64, "is_causal": is_causal} if shapes[0][0] == T else {}
    return peak_probe.measure_call(SETUP, cells, name, list(shapes), kwargs, seed=67,
                                   rows=ROWS if shapes[0][0] == T else [0], warmup=ex06.WARMUP,
                                   timeout=timeout)


def _ok(m: peak_probe_answer.Measured) -> peak_probe_answer.Measured:
    assert not m.error and m.raised is None and not m.missing, m
    assert m.peak is not None
    return m


def test_this_machine_measures_in_a_cgroup():
    """Root with a writable cgroup v1 memory controller: the probe must use it (the tests
    marked needs_cgroup must not all have skipped here)."""
    v1 = Path("/sys/fs/cgroup/memory")
    if os.geteuid() != 0 or not (v1 / "cgroup.procs").is_file() or not os.access(v1, os.W_OK):
        pytest.skip(f"not root with a writable cgroup v1 memory controller; mode here: "
                    f"{peak_probe.mode()} ({cgroups.cgroup_error()})")
    assert cgroups.cgroup_error() is None
    assert peak_probe.mode() == "cgroup v1"


@needs_cgroup
@pytest.mark.parametrize("is_causal", [False, True])
def test_reference_stays_far_under_the_limit(is_causal):
    """The notebook's reference solution: its NumPy allocations (tracemalloc, in this
    process) plus at most 1.5 MiB (the interpreter's own pages, page tables, the kernel's
    per-CPU charge cache), under 16 MiB; and its output rows are dense attention's."""
    m = _ok(_measure(_reference_cells(), is_causal=is_causal))
    ns: dict = {}
    exec(_reference_cells()[0], ns)
    rng = np.random.default_rng(67)
    Q, K, V = (rng.normal(size=(T, D)) for _ in range(3))
    out, traced = peak_traced_memory(ns["tiled_attention"], Q, K, V, 64, is_causal)
    assert traced <= m.peak <= traced + 1.5 * MIB, (traced / MIB, m.peak / MIB)
    assert m.peak < 14 * MIB
    assert m.value["shape"] == (T, D) and m.value["dtype"] == "float64"
    np.testing.assert_array_equal(m.value["rows"], out[ROWS])
    assert m.how == "cgroup v1" or m.how.startswith("cgroup v2")
    assert m.baseline > 10 * MIB  # NumPy and the inputs, resident before the learner's cells


@needs_cgroup
@pytest.mark.parametrize("is_causal", [False, True])
def test_dense_attention_is_far_over(is_causal):
    """Dense attention (the setup cell's own dense_attention): its T x T scores alone take
    128 MiB."""
    cell = ("def tiled_attention(Q, K, V, block_size=64, is_causal=False):\n"
            "    return dense_attention(Q, K, V, is_causal)\n")
    m = _ok(_measure([cell], is_causal=is_causal))
    assert m.peak >= 128 * MIB


@needs_cgroup
@pytest.mark.parametrize("how", ["fork", "multiprocessing", "subprocess"])
def test_a_childs_allocation_counts_however_soon_it_exits(how):
    """64 MiB touched by a child process that exits before the call returns (and within
    milliseconds: nothing is sampled)."""
    start = {
        "fork": "pid = os.fork()\n    if pid == 0:\n        a = np.ones(N)\n        os._exit(0)\n"
                "    os.waitpid(pid, 0)\n",
        "multiprocessing": "p = multiprocessing.get_context('fork').Process(target=np.ones, "
                           "args=(N,))\n    p.start()\n    p.join()\n",
        "subprocess": "subprocess.run([sys.executable, '-c', 'x = b\"1\" * (64 << 20)'], "
                      "check=True)\n",
    }[how]
    cell = ("import multiprocessing, os, subprocess, sys\nimport numpy as np\nN = 64 * 2**20 // 8\n"
            "def f(Q, K, V):\n    " + start + "    return Q.copy()\n")
    m = _ok(_measure([cell], "f", shapes=[(8, 4)] * 3))
    assert m.peak >= 64 * MIB, m


@needs_cgroup
def test_a_buffer_the_solution_cell_made_resident_counts():
    """A buffer touched when the solution cell runs, before the call, and only written
    into by the call: it counts, the call's growth alone would not show it."""
    cell = ("import numpy as np\n_B = np.ones(64 * 2**20 // 8)\n"
            "def f(Q, K, V):\n    _B[:Q.size] = Q.ravel()\n    return Q.copy()\n")
    m = _ok(_measure([cell], "f", shapes=[(8, 4)] * 3))
    assert 64 * MIB <= m.peak < 66 * MIB, m.peak / MIB


@needs_cgroup
@pytest.mark.parametrize("kind", ["shared mmap", "tmpfs file", "file written, not mapped"])
def test_shared_and_file_memory_counts(kind):
    """64 MiB in a shared anonymous mapping, a mapped file in /tmp (a tmpfs in the probe),
    or a file in /tmp written and closed (its pages stay, charged to the probe)."""
    body = {
        "shared mmap": "m = mmap.mmap(-1, N)\n    m.write(b'1' * N)\n    _KEEP.append(m)\n",
        "tmpfs file": "a = np.memmap('/tmp/a.bin', dtype=np.uint8, mode='w+', shape=(N,))\n"
                      "    a[:] = 1\n    _KEEP.append(a)\n",
        "file written, not mapped": "with open('/tmp/b.bin', 'wb') as fh:\n"
                                    "        fh.write(b'1' * N)\n",
    }[kind]
    cell = ("import mmap\nimport numpy as np\nN = 64 * 2**20\n_KEEP = []\n"
            "def f(Q, K, V):\n    " + body + "    return Q.copy()\n")
    m = _ok(_measure([cell], "f", shapes=[(8, 4)] * 3))
    assert m.peak >= 64 * MIB, m.peak / MIB


@needs_cgroup
def test_kernel_buffers_count():
    """Bytes written into socket buffers (the kernel's memory, no page of the process's
    own) are charged to the probe's cgroup too: 64 MiB over as many socket pairs as the
    machine's buffer limit needs."""
    cell = ("import socket\nimport numpy as np\n_KEEP = []\n"
            "def f(Q, K, V):\n    sent = 0\n"
            "    while sent < 64 * 2**20 and len(_KEEP) < 900:\n"
            "        a, b = socket.socketpair()\n"
            "        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)\n"
            "        a.setblocking(False)\n"
            "        try:\n            while True:\n                sent += a.send(b'1' * 65536)\n"
            "        except BlockingIOError:\n            pass\n"
            "        _KEEP.append((a, b))\n"
            "    return np.array([[float(sent)]])\n")
    m = _ok(_measure([cell], "f", shapes=[(8, 4)] * 3))
    sent = m.value["rows"][0, 0]
    assert sent >= 32 * MIB, sent
    assert m.peak >= sent, (m.peak / MIB, sent / MIB)


@needs_cgroup
def test_resets_and_trims_inside_lower_nothing():
    """128 MiB touched, freed and handed back (malloc_trim), then the process's own
    high-water mark and tracemalloc's peak reset: the cgroup's mark stays."""
    cell = ("import ctypes, gc, tracemalloc\nimport numpy as np\n"
            "def f(Q, K, V):\n    a = np.ones(128 * 2**20 // 8)\n    del a\n    gc.collect()\n"
            "    ctypes.CDLL(None).malloc_trim(0)\n"
            "    try:\n        open('/proc/self/clear_refs', 'w').write('5')\n"
            "    except OSError:\n        pass\n"
            "    return Q.copy()\n")
    m = _ok(_measure([cell], "f", shapes=[(8, 4)] * 3))
    assert m.peak >= 128 * MIB


@needs_cgroup
def test_cgroup_files_are_out_of_reach():
    """The probe sees no /sys (so no cgroup file to reset or leave)."""
    cell = ("import os\n"
            "def f(Q, K, V):\n    return [os.path.exists('/sys/fs/cgroup'), os.path.exists('/sys')]\n")
    m = _ok(_measure([cell], "f", shapes=[(8, 4)] * 3))
    assert m.value["type"] == "list" and m.value["ndarray"] is False
    from autograder.sandbox import sandbox_error

    if sandbox_error() is None:
        assert m.how == peak_probe.mode()  # not "not sandboxed"


@needs_cgroup
def test_imports_of_the_solution_cells_are_not_the_calls():
    """A library the solution cell imports (sympy: ~35 MiB resident) is imported before the
    baseline: only what the call and the cells themselves make resident counts."""
    pytest.importorskip("sympy")
    cell = ("import sympy\nimport numpy as np\n"
            "def f(Q, K, V):\n    return Q.copy()\n")
    m = _ok(_measure([cell], "f", shapes=[(8, 4)] * 3))
    assert m.peak < 2 * MIB
    assert m.baseline > 40 * MIB


@needs_cgroup
def test_learner_cells_do_not_run_and_names_must_be_defined():
    """Only the cells given run: a name only another cell defines is a NameError there, a
    function no cell defines is missing."""
    cell = "def f(Q, K, V):\n    return _SCRATCH\n"
    m = _measure([cell], "f", shapes=[(8, 4)] * 3)
    assert m.raised is not None and "NameError" in m.raised["kinds"], m
    assert "_SCRATCH" in m.raised["message"]
    m = _measure(["x = 1\n", "raise RuntimeError('a broken cell stops only itself')\n"], "f",
                 shapes=[(8, 4)] * 3)
    assert m.missing and not m.error


@needs_cgroup
def test_output_to_fd_1_and_prints_do_not_break_the_answer():
    cell = ("import os\n"
            "print('defined')\n"
            "def f(Q, K, V):\n    print('called')\n    os.write(1, b'{\"junk\": 1}\\n')\n"
            "    return Q * 2\n")
    m = _ok(_measure([cell], "f", shapes=[(8, 4)] * 3))
    rng = np.random.default_rng(67)
    np.testing.assert_array_equal(m.value["rows"], rng.normal(size=(8, 4))[[0]] * 2)


@needs_cgroup
def test_a_call_that_never_returns_is_stopped_and_its_cgroups_removed():
    cell = "def f(Q, K, V):\n    while True:\n        pass\n"
    parent, _ = cgroups.writable_hierarchy()
    m = _measure([cell], "f", shapes=[(8, 4)] * 3, timeout=8)
    assert "ran longer than 8 s of CPU time" in m.error
    assert not list(parent.parent.glob(f"autograder-peak-{os.getpid()}-*"))


def test_without_a_cgroup_the_probe_estimates_inside_itself(monkeypatch):
    """No cgroup (here: as if none could be made): the in-process measure, said so in
    ``how``; it still sees an allocation of the call's own process."""
    monkeypatch.setattr(peak_probe, "writable_hierarchy", lambda: (None, "none for this test"))
    cell = ("import numpy as np\n"
            "def f(Q, K, V):\n    a = np.ones(64 * 2**20 // 8)\n    return Q + a[0]\n")
    m = _ok(_measure([cell], "f", shapes=[(8, 4)] * 3))
    assert m.how.startswith("an in-process estimate (no memory cgroup: none for this test)")
    assert m.how.endswith(", by process")
    assert m.peak >= 60 * MIB


def test_imported_modules():
    cells = ["import numpy as np, os.path\nfrom a.b import c, d\nfrom . import rel\n",
             "def f():\n    import torch\n    from x import *\n", "%timeit 1\nimport math",
             "def broken(:\n"]
    assert peak_probe_program.imported_modules(cells) == ["numpy", "os.path", "a.b", "a.b.c", "a.b.d",
                                                  "torch", "x", "math"]


def _remote(cells: list[str]) -> Remote:
    """A proxy as the checker has it, for a notebook of the given solution cells (the
    peak check uses its session's notebook and time limit, and calls the function in the
    kernel: here, in this process)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    for source in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["nbgrader"] = {"solution": True, "grade": False, "locked": False,
                                     "grade_id": "tiled_attention", "schema_version": 3}
        nb.cells.append(cell)
    kernel = {"__name__": "__main__"}  # the kernel's namespace: setup and solution cells

    def call(handle, args, kwargs, **_):
        if "tiled_attention" not in kernel:
            for source in SETUP + cells:
                exec("\n".join(ln for ln in source.splitlines()
                               if not ln.lstrip().startswith(("%", "!"))), kernel)
        return kernel["tiled_attention"](*args, **kwargs), []

    remote = Remote.__new__(Remote)
    remote._session = types.SimpleNamespace(notebook=nb, timeout=120, call=call)
    remote._id, remote.changed_inputs = 0, []
    remote.__name__ = remote.bound_as = "tiled_attention"
    return remote


@needs_cgroup
def test_the_check_through_the_checker():
    """ex06.peak_memory given the checker's proxy: the reference passes, dense attention
    fails with the peak and how it was measured, and a function whose measured output is
    right only in some rows, or differs from the kernel's, fails on its values."""
    ex06.peak_memory(_remote(_reference_cells()), is_causal=True)
    dense = ("def tiled_attention(Q, K, V, block_size=64, is_causal=False):\n"
             "    return dense_attention(Q, K, V, is_causal)\n")
    with pytest.raises(CheckFailed, match=r"peak memory (1[3-9]\d|[2-9]\d\d)\.\d MiB, more "
                                          r"than 16 MiB \(measured by the grader, cgroup v"):
        ex06.peak_memory(_remote([dense]), is_causal=False)
    with pytest.raises(CheckFailed, match=r"define what it uses in its own cell"):
        ex06.peak_memory(_remote(["def tiled_attention(Q, K, V, **kw):\n    return _G\n"]),
                         is_causal=False)
    with pytest.raises(CheckFailed, match=r"differs from dense attention"):
        ex06.peak_memory(_remote(["import numpy as np\n"
                                  "def tiled_attention(Q, K, V, **kw):\n"
                                  "    return np.zeros((Q.shape[0], V.shape[1]))\n"]),
                         is_causal=False)
    # Rows 0-63 and 4032-4095 right, zeros between, where it is measured (the probe: no
    # ipykernel, no pytest), dense attention in the kernel (here): the whole output counts.
    honest = [c.replace("def tiled_attention(", "def _honest_tiled(") for c in _reference_cells()]
    where = "import sys\nimport numpy as np\nKERNEL = 'ipykernel' in sys.modules or 'pytest' in sys.modules\n"
    rows_only = where + (
        "def tiled_attention(Q, K, V, block_size=64, is_causal=False):\n"
        "    if KERNEL:\n"
        "        return dense_attention(Q, K, V, is_causal)\n"
        "    out = np.zeros((Q.shape[0], V.shape[1]))\n"
        "    for lo in (0, Q.shape[0] - 64):\n"
        "        out[lo:lo + 64] = _honest_tiled(Q[lo:lo + 64], K, V, block_size)\n"
        "    return out\n")
    with pytest.raises(CheckFailed, match=r"the output of the measured call differs from "
                                          r"dense attention \(largest error [\d.e+-]+, "
                                          r"allowed 1e-10\)$"):
        ex06.peak_memory(_remote(honest + [rows_only]), is_causal=False)
    # Honest where it is measured, other values in the kernel: compared with the kernel's.
    other = where + ("def tiled_attention(Q, K, V, block_size=64, is_causal=False):\n"
                     "    out = _honest_tiled(Q, K, V, block_size, is_causal)\n"
                     "    return out[::-1].copy() if KERNEL else out\n")
    with pytest.raises(CheckFailed, match=r"returned other values than your kernel for the "
                                          r"same inputs"):
        ex06.peak_memory(_remote(honest + [other]), is_causal=True)
