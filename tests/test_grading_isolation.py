"""Warm kernels start clean (issue 16): two submissions graded back to back by one worker,
so both kernels are forked by the same warm sandbox (autograder.warm_sandbox.Zygote).

The first learner leaves everything a kernel can leave behind: a global, a monkey-patch
of numpy.sum, a changed module state (numpy's print options, an attribute on json, an
environment variable, sys.path), files in the working folder, /tmp and /dev/shm, a tree of
folders deeper than Python's recursion limit in the working folder and /tmp (shutil.rmtree
raised RecursionError on it, and every later kernel of the worker failed), a System V
shared memory segment and a background process in its own session. The second learner's
extra cell looks for each of them, prints what it found and, if it found anything, replaces
its attention with a wrong one, so the leftovers would cost it points as well as show.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from conftest import grade
from submissions import filled_notebook, write_submission

from autograder import scratch
from autograder.notebook import nbgrader_meta

A = "ex01_python_attention"
FULL = 14.0
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("isolation")]

# The sandbox's PID 1 started at: the same in both kernels when one warm sandbox forked both.
SANDBOX_ID = ("print('sandbox', open('/proc/1/stat').read().rsplit(')', 1)[1].split()[19], "
              "'kernel pid', __import__('os').getpid())")

POLLUTE = """\
import ctypes, json, os, subprocess, sys
import numpy
POLLUTED_GLOBAL = 'from the first learner'
numpy.sum = lambda *args, **kwargs: 42
numpy.set_printoptions(precision=2)
json.polluted = True
os.environ['POLLUTED'] = '1'
sys.path.append('/polluted')
for path in ('left_behind.txt', '/tmp/left_behind.txt', '/dev/shm/left_behind'):
    with open(path, 'w') as f:
        f.write('answers of the first learner')
for top in ('.', '/tmp'):
    here = os.getcwd()
    os.chdir(top)
    for _ in range(1500):
        os.mkdir('deep')
        os.chdir('deep')
    os.chdir(here)
libc = ctypes.CDLL(None)
shm = libc.shmget(0x1607, 4096, 0o1666)  # IPC_CREAT | 0666
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)  # polluter-daemon'],
                 start_new_session=True)
print('left behind:', os.listdir('.'), os.listdir('/tmp'), os.listdir('/dev/shm'))
print('shared memory id', shm)
""" + SANDBOX_ID

# Red team: the folders a kernel uses and cannot remove, made read-only (its last cell): the
# next learner's kernel could not make its sockets in the connection folder (kernel-died).
LOCK = """\
import os
run = os.environ['JUPYTER_RUNTIME_DIR']
for folder in (run, os.path.dirname(run), '.', '/tmp', '/dev/shm'):
    os.chmod(folder, 0o555)
"""

INSPECT = """\
import json, os, sys
print('modules at the first cell:', json.dumps(sorted(sys.modules)))
import numpy
found = []
if 'POLLUTED_GLOBAL' in globals():
    found.append('global')
if numpy.sum([1, 2]) != 3:
    found.append('numpy.sum')
if numpy.get_printoptions()['precision'] != 8:
    found.append('numpy print options')
if hasattr(json, 'polluted'):
    found.append('json.polluted')
if 'POLLUTED' in os.environ:
    found.append('environment')
if '/polluted' in sys.path:
    found.append('sys.path')
for path in ('left_behind.txt', '/tmp/left_behind.txt', '/dev/shm/left_behind', 'deep',
             '/tmp/deep'):
    if os.path.exists(path):
        found.append(path)
run = os.environ['JUPYTER_RUNTIME_DIR']
for folder in (run, os.path.dirname(run), '.', '/tmp', '/dev/shm'):
    if not os.access(folder, os.W_OK):
        found.append('read-only ' + folder)
with open('/proc/sysvipc/shm') as f:
    if any(line.split()[0] == str(0x1607) for line in f.readlines()[1:]):
        found.append('shared memory')
for pid in os.listdir('/proc'):
    if pid.isdigit():
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as f:
                if b'polluter-daemon' in f.read():
                    found.append('background process')
        except OSError:
            pass
print('leftovers:', found)
if found:
    def scaled_dot_product_attention(*args, **kwargs):
        return None
""" + "\n" + SANDBOX_ID


def _after(nb, grade_id, source):
    i = next(i for i, c in enumerate(nb.cells) if nbgrader_meta(c).get("grade_id") == grade_id)
    nb.cells.insert(i + 1, nbformat.v4.new_code_cell(source))
    return nb


def _output(ws, student, marker):
    nb = nbformat.read(ws / "autograded" / student / A / f"{A}.ipynb", as_version=4)
    for c in nb.cells:
        for out in c.get("outputs", []):
            if out.get("output_type") == "stream" and marker in out.get("text", ""):
                return out["text"]
    raise AssertionError(f"no output with {marker!r} in {student}'s notebook")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("isolation")
    # Graded in this order (sorted ids) by one worker: a's kernel, then b's.
    write_submission(root / "submitted", "a-polluter", A,
                     _after(_after(filled_notebook(A), "setup", POLLUTE), "test_kc3", LOCK))
    # The inspection runs before the first test (the output of a cell after hidden tests
    # sent their inputs is not kept); what it found replaces the learner's attention after
    # the attention cell, where the replacement counts.
    inspector = _after(filled_notebook(A), "setup", INSPECT)
    write_submission(root / "submitted", "b-inspector", A, _after(
        inspector, "scaled_dot_product_attention",
        "if found:\n    def scaled_dot_product_attention(*args, **kwargs):\n        return None\n"))
    proc, rows, _ = grade(root / "submitted", root / "ws", jobs=1, extra=["--no-progress"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root / "ws", rows


def test_the_first_learner_left_everything_behind(graded):
    ws, rows = graded
    text = _output(ws, "a-polluter", "left behind:")
    assert "left_behind.txt" in text and "left_behind'" in text and "'deep'" in text, text
    assert int(re.search(r"shared memory id (-?\d+)", text).group(1)) >= 0
    # Its patched numpy.sum and its process reach nothing of the checker's (issue 23): its
    # reference functions keep full marks.
    assert (rows["a-polluter"]["status"], float(rows["a-polluter"]["score"])) == ("graded", 14.0)


def test_one_warm_sandbox_forked_both_kernels(graded):
    ws, _ = graded
    pattern = r"sandbox (\d+) kernel pid (\d+)"
    first = re.search(pattern, _output(ws, "a-polluter", "sandbox")).groups()
    second = re.search(pattern, _output(ws, "b-inspector", "sandbox")).groups()
    assert first[0] == second[0], (first, second)  # the same PID 1: the same sandbox
    assert int(second[1]) > int(first[1])  # a later process of the same PID namespace


def test_the_second_learner_finds_nothing_and_gets_full_marks(graded):
    ws, rows = graded
    assert "leftovers: []" in _output(ws, "b-inspector", "leftovers:")
    row = rows["b-inspector"]
    assert (row["status"], float(row["score"])) == ("graded", FULL), json.dumps(row)


def test_a_forked_kernel_finds_what_it_imports_imported_by_the_warm_sandbox(graded):
    """What a kernel imports as it starts, and the course's client every test cell imports,
    come imported with the fork (kernel_zygote.KERNEL_IMPORTS): the kernel's first cell
    finds no module the warm sandbox lacks. A module missing from that list (compiled from
    source by every kernel: its course copy keeps no bytecode) fails this test."""
    ws, _ = graded
    text = _output(ws, "b-inspector", "modules at the first cell:")
    kernel = set(json.loads(text.split("modules at the first cell:", 1)[1].splitlines()[0]))
    warm = subprocess.run([sys.executable, "-c", "import json, sys\n"
                           "from autograder import kernel_zygote\n"
                           "kernel_zygote._preload([])\n"
                           "print(json.dumps(sorted(sys.modules)))"],
                          capture_output=True, text=True, timeout=120, check=True)
    assert "autograder.kernel_client" in kernel
    assert kernel - set(json.loads(warm.stdout)) == set()


def test_a_sandbox_whose_python_cannot_start_says_so_at_once(monkeypatch):
    """A warm sandbox whose Python dies before it connects (here: a course file its
    package imports is missing from the copy) is reported as exited, with its status, when
    it exits; it used to be waited for until a 300 s accept timeout, then per submission."""
    import shutil

    from autograder import sandbox, warm_sandbox

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    monkeypatch.setattr(sandbox, "KERNEL_FILES",
                        tuple(f for f in sandbox.KERNEL_FILES if f != "verdicts.py"))
    mine = f"autograder-zygote-{os.getpid()}-*"
    roots = {Path(tempfile.gettempdir()), scratch.memory_root() or Path(tempfile.gettempdir())}
    before = {p for r in roots for p in r.glob(mine)}
    with pytest.raises(RuntimeError, match="did not start: it exited with status 1 before it "
                                           "was ready"):
        warm_sandbox.Zygote()
    assert {p for r in roots for p in r.glob(mine)} == before  # its folders went with it


def _group_alive(group: int) -> bool:
    """Whether a process of process group ``group`` runs (zombies do not count)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if fields[2] == str(group) and fields[0] != "Z":
            return True
    return False


def test_a_warm_sandbox_closed_as_it_starts_leaves_no_process_behind():
    """The warm sandbox leads a process group of its own, and close() kills the group
    whole: closed in bubblewrap's first milliseconds, before its inner process has armed
    ``--die-with-parent`` (bubblewrap issue 633), nothing of it is left running."""
    import shutil
    import time

    from autograder import warm_sandbox

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    zygote = warm_sandbox.Zygote(wait=False)
    group = zygote.proc.pid
    assert os.getpgid(group) == group  # bubblewrap's processes are the group's
    zygote.close()
    deadline = time.monotonic() + 30
    while _group_alive(group) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_alive(group)


def test_a_kernel_manager_cleaned_up_late_leaves_the_next_kernel_running(tmp_path):
    """CI failure (robustness class, student warns_on_stderr: kernel-died in a hidden test):
    a kernel's manager whose clean-up ran only at garbage collection (its ``__del__``) told
    the warm sandbox to kill every process but its PID 1, after the sandbox had forked the
    next learner's kernel, which died mid-test. A superseded manager now releases, signals
    and counts nothing of the sandbox."""
    import asyncio
    import shutil
    import signal

    from autograder.sandboxed_kernel import SandboxedKernelManager

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    (tmp_path / "data.txt").write_text("x")

    async def two_kernels():
        first = SandboxedKernelManager(assignment=A)
        await first.start_kernel(cwd=str(tmp_path))
        second = SandboxedKernelManager(assignment=A)  # first's shutdown never ran
        await second.start_kernel(cwd=str(tmp_path))
        try:
            kernel = second.provisioner.process
            assert first.provisioner.process.zygote is kernel.zygote  # one warm sandbox
            assert first._kernel_pids() == []
            first.signal_now(signal.SIGKILL)
            first.__del__()  # what garbage collection runs
            # A socket left open made the collection of first's zmq context wait for
            # ever (its term()): pytest hung after its last test, in gc at unconfigure.
            assert first._control_socket is None
            await asyncio.sleep(0.3)
            assert kernel.poll() is None, f"the next kernel died: status {kernel.poll()}"
            assert kernel.pid in second._kernel_pids()
            client = second.client()
            client.start_channels()
            await client.wait_for_ready(timeout=30)
            reply = await client.execute_interactive("x = 6 * 7", timeout=30)
            assert reply["content"]["status"] == "ok"
            client.stop_channels()
        finally:
            await second.shutdown_kernel(now=True)

    asyncio.run(two_kernels())


def test_a_kernel_that_died_is_released_when_nbclient_cleans_up(tmp_path):
    """nbclient cleans up a dead kernel (os._exit, a crash) with ``km.cleanup_resources()``
    alone, which AsyncKernelManager bound to the base class's coroutine: the sandbox (its
    leftovers killed, its folders wiped) was released only at garbage collection."""
    import asyncio
    import shutil
    import signal

    from autograder.sandboxed_kernel import SandboxedKernelManager

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")

    async def dies():
        km = SandboxedKernelManager(assignment=A)
        await km.start_kernel(cwd=str(tmp_path))
        zygote = km.provisioner.process.zygote
        km.signal_now(signal.SIGKILL)
        while await km.is_alive():
            await asyncio.sleep(0.01)
        await km.cleanup_resources()  # nbclient's _async_cleanup_kernel for a dead kernel
        assert km._zygote is None and not zygote.dirty
        assert not any((zygote.root / "work").iterdir())

    asyncio.run(dies())
