"""``check --warm``: the next check served by a process kept ready for it (autograder.check_warm,
autograder.check_host).

A warm check prints what the same check prints without it, byte for byte, with the same exit
status, for a correct and a wrong notebook, and for ex05 (its kernel and probe started
ahead, with torch's lazily imported modules). It is served only by a host of the same
fingerprint: a changed environment gets a check of its own and a new host; the old one
exits. A host exits when idle, and on SIGTERM, removing its socket. The socket's folder is
this user's alone. Each test has a runtime folder of its own (``XDG_RUNTIME_DIR``), so a
host never serves another test.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from conftest import run
from submissions import filled_notebook, parse_variant, variants

from autograder import check_early, check_warm, in_notebook, notebook
from autograder.config import EXERCISES

EX01, EX02, EX05 = "ex01_python_attention", "ex02_numpy_attention", "ex05_torch_attention"
NOTE = "(--warm: the next check starts sooner"
WAIT = 120.0  # seconds a test waits for a host to appear or to go: an outcome, not a timing


@pytest.fixture
def runtime(monkeypatch):
    """A short folder of this test's own as XDG_RUNTIME_DIR (socket paths are short); the
    host started there is stopped at the end."""
    path = runtime_folder()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    yield path
    stop_host(path)


def runtime_folder() -> Path:
    """A new short folder (mode 0700) for XDG_RUNTIME_DIR."""
    path = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    path.chmod(0o700)
    return path


def stop_host(runtime: Path) -> None:
    """Stop the host started with ``runtime`` as XDG_RUNTIME_DIR, if any; remove the folder."""
    where = runtime / f"autograder-check-{os.getuid()}"
    pid = check_warm.host_pid(where) if where.is_dir() else None
    try:
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGTERM)
            if not _wait(lambda: not _alive(pid)):
                os.kill(pid, signal.SIGKILL)
                raise AssertionError(f"the warm host {pid} was still there {WAIT:g} s after "
                                     "SIGTERM (a hang at exit)")
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.is_file() and status.read_text().split(") ")[-1].startswith("Z"))


def _wait(condition) -> bool:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# A learner's cell that writes to the kernel's own standard output (a shell command: not a
# notebook output) and uses its working folder: a kernel started ahead shows both as a
# kernel started by the check does.
OWN_OUTPUT = ('import os\nos.system("echo from the shell")\n'
              'open("results.txt", "w").write("saved")\n'
              'assert open(os.path.join(os.getcwd(), "results.txt")).read() == "saved"\n')


def _notebook(tmp_path: Path, assignment: str, variant: str | None = None,
              folder: str | None = None) -> Path:
    cells = parse_variant(variants(assignment)[variant])[0] if variant else None
    path = tmp_path / (folder or variant or "reference") / assignment / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(_with_own_output(filled_notebook(assignment, cells)), path)
    return path


def _with_own_output(nb):
    nb.cells.insert(2, nbformat.v4.new_code_cell(OWN_OUTPUT))
    return nb


def _check(path: Path, *extra: str, env: dict | None = None):
    return run([sys.executable, "-m", "autograder", "check", str(path), *extra],
               env=dict(env or {}, AUTOGRADER_CHECK_IDLE="600"))


def _socket(runtime: Path) -> Path:
    return check_warm.address(runtime / f"autograder-check-{os.getuid()}")


def _host_up(runtime: Path) -> int:
    assert _wait(_socket(runtime).exists), "no host started"
    return check_warm.host_pid(_socket(runtime).parent)


@pytest.mark.slow
def test_a_warm_check_prints_what_a_cold_check_prints(tmp_path, runtime):
    right = _notebook(tmp_path, EX01)
    wrong = _notebook(tmp_path, EX01, min(n for n in variants(EX01) if "softmax" in n))
    cold = {p: _check(p) for p in (right, wrong)}
    assert [cold[p].returncode for p in (right, wrong)] == [0, 1]
    first = _check(right, "--warm")
    assert (first.stdout, first.returncode) == (cold[right].stdout, 0)
    assert NOTE in first.stderr  # run as usual, then a host started
    assert "from the shell" in cold[right].stdout
    pid = _host_up(runtime)
    for path in (right, wrong, right):  # another notebook, then the first again
        warm = _check(path, "--warm")
        assert NOTE not in warm.stderr, warm.stderr  # served by the host
        assert (warm.stdout, warm.returncode) == (cold[path].stdout, cold[path].returncode)
        assert check_warm.host_pid(_socket(runtime).parent) == pid and _alive(pid)
    # the learner saves a wrong answer in the same file: still served, and judged anew
    saved = _notebook(tmp_path, EX01, wrong.parent.parent.name, folder="reference")
    assert saved == right
    warm = _check(right, "--warm")
    assert NOTE not in warm.stderr
    assert (warm.stdout.replace(str(right), str(wrong)), warm.returncode) == (
        cold[wrong].stdout, 1)
    # a command line argparse refuses: answered as without --warm, and the host goes on
    typo = _check(right, "--warm", "--timeout=abc")
    assert (typo.returncode, typo.stderr) == (2, _check(right, "--timeout=abc").stderr)
    assert NOTE not in _check(right, "--warm").stderr and _alive(pid)


@pytest.mark.slow
def test_another_environment_is_not_served_by_the_host(tmp_path, runtime):
    path = _notebook(tmp_path, EX01)
    _check(path, "--warm")
    pid = _host_up(runtime)
    other = _check(path, "--warm", env={"AUTOGRADER_TEST_OTHER": "1"})
    assert NOTE in other.stderr  # checked as usual, and a new host started
    assert other.returncode == 0 and "points: 14 earned" in other.stdout.replace(".0 ", " ")
    assert _wait(lambda: not _alive(pid)), "the old host still runs"
    assert _wait(lambda: check_warm.host_pid(_socket(runtime).parent) not in (None, pid))


@pytest.mark.slow
def test_a_host_exits_when_idle_and_on_sigterm(tmp_path, runtime):
    path = _notebook(tmp_path, EX01)
    run([sys.executable, "-m", "autograder", "check", str(path), "--warm"],
        env={"AUTOGRADER_CHECK_IDLE": "1"})
    where = _socket(runtime).parent  # the host writes its PID before its socket appears
    assert _wait(lambda: check_warm.host_pid(where) is not None), "no host started"
    pid = check_warm.host_pid(where)
    assert _wait(lambda: not _alive(pid)) and not _socket(runtime).exists()
    _check(path, "--warm")
    pid = _host_up(runtime)
    os.kill(pid, signal.SIGTERM)
    assert _wait(lambda: not _alive(pid)) and not _socket(runtime).exists()
    assert NOTE in _check(path, "--warm").stderr  # no host: checked as usual


@pytest.mark.slow
def test_a_warm_ex05_check_prints_what_a_cold_check_prints(tmp_path, runtime):
    path = _notebook(tmp_path, EX05)
    cold = _check(path)
    assert cold.returncode == 0, cold.stdout + cold.stderr
    _check(path, "--warm")
    _host_up(runtime)
    warm = _check(path, "--warm")
    assert NOTE not in warm.stderr
    assert (warm.stdout, warm.returncode) == (cold.stdout, 0)


@pytest.mark.slow
def test_a_second_check_from_the_notebook_is_served_warm(runtime, monkeypatch, capsys):
    """``%check`` runs ``check --warm`` on its copy of the notebook, in the same folder each
    time (the host's kernel is started there): the second is served, with the same rows."""
    monkeypatch.setenv("AUTOGRADER_CHECK_IDLE", "600")
    nb = _with_own_output(filled_notebook(EX01))
    outputs = []
    for _ in range(2):
        code = in_notebook.check_notebook(nb, EX01, f"{EX01}.ipynb", [], shown_as="nb")
        outputs.append((code, capsys.readouterr().out))
        _host_up(runtime)
    (first_code, first), (second_code, second) = outputs
    assert NOTE in first and NOTE not in second, second
    assert first_code == second_code == 0, second
    assert first.replace(first[first.index(NOTE):], "") == second
    assert second.count("from the shell") == 1  # the kernel's own output, relayed


@pytest.mark.slow
def test_the_checkers_warnings_show_at_every_served_check(tmp_path, runtime):
    """A warning the checker raises (NumPy's ComplexWarning, for a softmax that returns
    complex numbers) is printed by every check, as by a process of its own: Python shows
    one once per place and process, and the host is one process."""
    path = tmp_path / EX02 / f"{EX02}.ipynb"
    path.parent.mkdir()
    nb = filled_notebook(EX02)
    at = next(i for i, c in enumerate(nb.cells) if "def softmax" in c.source)
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(
        "_softmax_real = softmax\n"
        "def softmax(*a, **k):\n    return _softmax_real(*a, **k).astype(complex)\n"))
    nbformat.write(nb, path)
    cold = _check(path)
    assert "ComplexWarning" in cold.stderr, cold.stderr
    _check(path, "--warm")
    _host_up(runtime)
    for _ in range(2):
        warm = _check(path, "--warm")
        assert (warm.stdout, warm.stderr, warm.returncode) == (
            cold.stdout, cold.stderr, cold.returncode)


def test_a_folder_name_that_is_not_utf8_has_a_fingerprint(tmp_path, monkeypatch):
    folder = Path(os.fsdecode(bytes(tmp_path) + b"/bad\xff"))
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    assert len(check_warm.fingerprint()) == 64


def test_released_cells_are_read_again_when_a_release_file_changes(tmp_path):
    """What identifies a notebook's assignment is read once per change of the release's
    files: a host lives on between checks, and in this repository a learner's notebook
    is the release's file."""
    folder = tmp_path / "exercises" / EX01
    folder.mkdir(parents=True)
    nb = nbformat.read(EXERCISES / EX01 / f"{EX01}.ipynb", as_version=4)
    nbformat.write(nb, folder / f"{EX01}.ipynb")
    assert notebook.identify_assignment(nb, tmp_path / "exercises") == EX01
    other = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("other")])
    nbformat.write(other, folder / f"{EX01}.ipynb")  # the file changes (size and time)
    assert notebook.identify_assignment(nb, tmp_path / "exercises") is None


def test_the_socket_folder_is_this_users_alone(runtime, monkeypatch):
    where = check_warm.folder()
    assert where == runtime / f"autograder-check-{os.getuid()}"
    assert where.stat().st_mode & 0o777 == 0o700
    where.chmod(0o755)  # another user could reach a socket in it: not used
    assert check_warm.folder() is None
    where.chmod(0o700)
    long = runtime / ("x" * 90)
    long.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(long))  # too long for a socket's path
    assert check_warm.folder() == Path(tempfile.gettempdir()) / f"autograder-check-{os.getuid()}"


def test_the_fingerprint_follows_the_environment_and_the_course_files(tmp_path, monkeypatch):
    course = tmp_path / "course"
    course.mkdir()
    (course / "checks.py").write_text("x = 1\n")
    monkeypatch.setattr(check_warm, "COURSE_FILES", (course,))
    first = check_warm.fingerprint()
    assert check_warm.fingerprint() == first
    monkeypatch.setenv("PWD", "/elsewhere")  # what a shell changes between two commands
    assert check_warm.fingerprint() == first
    monkeypatch.setenv("AUTOGRADER_TEST_OTHER", "1")
    assert check_warm.fingerprint() != first
    monkeypatch.delenv("AUTOGRADER_TEST_OTHER")
    assert check_warm.fingerprint() == first
    (course / "checks.py").write_text("x = 22\n")  # another size
    assert check_warm.fingerprint() != first
    (course / "checks.py").write_text("x = 1\n")
    os.utime(course / "checks.py", ns=(1, 1))  # another time of change
    assert check_warm.fingerprint() != first


def test_warm_is_a_check_option_only_and_its_idle_time_is_checked(monkeypatch):
    assert check_warm.wanted(["check", "--warm", "x.ipynb"])
    assert not check_warm.wanted(["check", "x.ipynb"])
    assert not check_warm.wanted(["grade", "--warm"])
    assert check_early.notebook_of(["check", "--warm", "a/x.ipynb"]) == Path("a/x.ipynb")
    monkeypatch.setenv("AUTOGRADER_CHECK_IDLE", "soon")
    with pytest.raises(ValueError, match="AUTOGRADER_CHECK_IDLE .*'soon'"):
        check_warm.idle_seconds()
    monkeypatch.setenv("AUTOGRADER_CHECK_IDLE", "-1")
    with pytest.raises(ValueError, match="'-1'"):
        check_warm.idle_seconds()
    monkeypatch.setenv("AUTOGRADER_CHECK_IDLE", "0")
    assert check_warm.idle_seconds() == 0 and not check_warm.start_host(["check", "x.ipynb"])
