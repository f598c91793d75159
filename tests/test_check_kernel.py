"""The kernel ``check`` runs a notebook in (autograder/check_kernel.py): a kernel that dies
before it answers, as when another program takes a port jupyter_client gave it (a race
jupyter_client cannot close: it picks free ports, closes them, and the kernel binds them
later), runs none of the learner's code, so the check starts a fresh one; when none will
start, the learner reads one ``error:`` line and exit status 2, never a traceback."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import run
from jupyter_core.utils import run_sync

from autograder import check_early, check_kernel, notebook_run

EX01 = "ex01_python_attention"


def _notebook() -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])


@pytest.mark.skipif(os.name != "posix", reason="Unix sockets")
def test_the_kernel_talks_over_unix_sockets_in_a_folder_it_removes(tmp_path):
    """No TCP port to race for: ipc sockets in a folder of the kernel's own, gone once the
    notebook has run."""
    km = check_kernel.launch(tmp_path)
    assert km.transport == "ipc" and km.sockets is not None
    assert Path(km.ip).parent == km.sockets and km.sockets.is_dir()
    nb = _notebook()
    notebook_run.execute(nb, tmp_path, timeout=60, kernel=km)
    assert nb.cells[0].outputs[0]["text"] == "42\n"
    assert not km.sockets.exists()


@pytest.mark.skipif(os.name != "posix", reason="Unix sockets")
def test_a_notebook_whose_kernel_dies_leaves_no_socket_folder(tmp_path):
    """nbclient cleans up a dead kernel with ``km.cleanup_resources()`` alone (bound by
    AsyncKernelManager to the base class's coroutine): the folder goes then too."""
    km = check_kernel.launch(tmp_path)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import os; os._exit(3)")])
    record = notebook_run.execute(nb, tmp_path, timeout=60, kernel=km)
    assert "the kernel died" in record.stopped_because
    assert not km.sockets.exists()


def test_a_kernel_whose_port_is_taken_is_replaced(tmp_path):
    """Over TCP (Windows), the port the kernel was given is held by another socket: that
    kernel exits with "Address already in use"; the run goes on in a fresh kernel and the
    cell runs."""
    nb = _notebook()
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        km = check_kernel.CheckKernelManager(kernel_name="python3")
        km.cache_ports = False  # else the provisioner picks the ports itself
        km.shell_port = held.getsockname()[1]
        km.started_in = (tmp_path, ())
        run_sync(km.start_kernel)(cwd=str(tmp_path))
        record = notebook_run.execute(nb, tmp_path, timeout=60, kernel=km)
    assert nb.cells[0].outputs[0]["text"] == "42\n"
    assert not record.not_run and not record.stopped_because


def test_kernels_that_always_die_give_a_clear_error(tmp_path, monkeypatch):
    """Every kernel exits as it starts: three are tried, then KernelStartError says so."""
    monkeypatch.setattr(check_kernel, "LAUNCH", "raise SystemExit(3)")
    started = []
    real = check_kernel.launch
    monkeypatch.setattr(check_kernel, "launch",
                        lambda *a, **k: started.append(a) or real(*a, **k))
    with pytest.raises(check_kernel.KernelStartError, match="died as it started, 3 times"):
        notebook_run.execute(_notebook(), tmp_path, timeout=60)
    assert len(started) == check_kernel.STARTS == 3


@pytest.mark.slow
def test_check_says_no_kernel_started_without_a_traceback(tmp_path):
    """``check`` where every kernel dies at start (a sitecustomize that ends the kernel's
    process, ``python -c <launcher> -f <connection file>``): exit status 2, one error line."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, sys\n"
        "if sys.argv[:1] == ['-c'] and '-f' in sys.argv:\n"
        "    os._exit(3)\n", encoding="utf-8")
    notebook = tmp_path / f"{EX01}.ipynb"
    nbformat.write(nbformat.read(f"exercises/{EX01}/{EX01}.ipynb", as_version=4), notebook)
    proc = run([sys.executable, "-m", "autograder", "check", str(notebook)],
               env={"PYTHONPATH": str(site)})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "could not be checked: the Python kernel died as it started, 3 times" in \
        proc.stderr, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("argv, notebook", [
    (["check", "a.ipynb"], "a.ipynb"),
    (["check", "--timeout", "5", "a.ipynb"], "a.ipynb"),
    (["check", "a.ipynb", "--visible-only"], "a.ipynb"),
    (["check", "--timeout=5", "a.ipynb"], "a.ipynb"),
    (["check", "--help"], None),
    (["check", "a.ipynb", "b.ipynb"], None),
    (["check", "--timeout", "x", "a.ipynb"], None),
    (["grade", "subs"], None),
    ([], None),
])
def test_the_early_start_reads_only_a_check_of_one_notebook(argv, notebook):
    found = check_early.notebook_of(argv)
    assert (str(found) if found else None) == notebook


@pytest.mark.skipif(os.name != "posix", reason="Unix sockets")
def test_the_kernel_started_before_the_imports_is_the_one_that_runs(tmp_path):
    """``python -m autograder check`` starts its kernel before it imports jupyter_client
    (autograder.check_early); the check adopts that process and its sockets, and runs
    the notebook there."""
    path = tmp_path / "n.ipynb"
    nbformat.write(_notebook(), path)
    early = check_early.start(["check", str(path)])
    assert early is not None and early.proc.poll() is None
    km = check_kernel.launch(tmp_path, (), early=early)
    assert km.provisioner.process is early.proc and km.sockets == early.sockets
    nb = _notebook()
    notebook_run.execute(nb, tmp_path, timeout=60, kernel=km)
    assert nb.cells[0].outputs[0]["text"] == "42\n"
    assert early.proc.poll() is not None and not early.sockets.exists()


@pytest.mark.skipif(os.name != "posix", reason="Unix sockets")
def test_an_early_kernel_for_another_folder_is_discarded(tmp_path):
    path = tmp_path / "n.ipynb"
    nbformat.write(_notebook(), path)
    early = check_early.start(["check", str(path)])
    other = tmp_path / "other"
    other.mkdir()
    km = check_kernel.launch(other, (), early=early)
    try:
        assert early.proc.poll() is not None and not early.sockets.exists()
        assert km.provisioner.process is not early.proc
    finally:
        check_kernel.stop(km)
