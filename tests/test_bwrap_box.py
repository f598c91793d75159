"""Every sandbox's bubblewrap command line, tested as data (issue 24): built in one place,
:mod:`autograder.bwrap_box`, with the isolation no caller can leave out, and each of the
course's sandboxes (kernel, warm sandbox, probes, rustc, a Rust program) writable only
where it must be; and how a sandbox is stopped (:func:`autograder.bwrap_box.kill`). Nothing
here starts bubblewrap."""

from __future__ import annotations

import ast
import contextlib
import os
import signal
import subprocess
from pathlib import Path

import pytest

from autograder import bwrap_box, peak_probe_program, probe, rust_toolchain, sandbox, torch_probe
from autograder.bwrap_box import ISOLATION, Box

PACKAGE = Path(__file__).resolve().parent.parent / "autograder"
BWRAP = "/usr/bin/bwrap"


def mounts(line: list[str], flag: str) -> list[tuple[str, str]]:
    """The (source, destination) pairs of ``flag`` (``--bind``, ``--ro-bind`` ...) before
    the command's ``--``."""
    head = line[:line.index("--")]
    return [(head[i + 1], head[i + 2]) for i, arg in enumerate(head) if arg == flag]


def env_of(line: list[str]) -> dict[str, str]:
    head = line[:line.index("--")]
    return {head[i + 1]: head[i + 2] for i, arg in enumerate(head) if arg == "--setenv"}


def assert_isolated(line: list[str], argv_start: str) -> None:
    """What every sandbox gets: bubblewrap, then its isolation, then (after the mounts) an
    environment cleared and rebuilt, and the command after ``--``."""
    assert line[:1 + len(ISOLATION)] == [BWRAP, *ISOLATION], line[:6]
    head = line[:line.index("--")]
    assert head.count("--clearenv") == 1
    setenv = [i for i, arg in enumerate(head) if arg == "--setenv"]
    assert all(i > head.index("--clearenv") for i in setenv)
    assert line[line.index("--") + 1] == argv_start


def test_command_puts_isolation_first_and_the_environment_after_clearing_it():
    box = Box(mounts=("--tmpfs", "/tmp"), chdir="/tmp", env={"PATH": "/usr/bin", "A": "1"})
    line = bwrap_box.command(BWRAP, box, ["python", "-c", "pass"])
    assert line == [BWRAP, *ISOLATION, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
                    "--chdir", "/tmp", "--clearenv", "--setenv", "PATH", "/usr/bin",
                    "--setenv", "A", "1", "--", "python", "-c", "pass"]
    bare = bwrap_box.command(BWRAP, Box(proc_and_dev=False, as_pid_1=True, new_session=True),
                             ["/program"])
    assert bare == [BWRAP, *ISOLATION, "--as-pid-1", "--new-session", "--chdir", "/",
                    "--clearenv", "--", "/program"]


@pytest.mark.parametrize(("box", "argv", "named"), [
    (Box(), [], "argv is empty"),
    (Box(chdir="tmp"), ["x"], "'tmp'"),
    (Box(env={"A=B": "1"}), ["x"], "'A=B'"),
    (Box(env={"": "1"}), ["x"], "''"),
])
def test_command_refuses_a_box_it_cannot_express(box, argv, named):
    with pytest.raises(ValueError, match=named):
        bwrap_box.command(BWRAP, box, argv)


def test_mount_helpers_default_the_destination_to_the_source():
    assert bwrap_box.ro_bind("/a") == ["--ro-bind", "/a", "/a"]
    assert bwrap_box.bind("/a", "/b") == ["--bind", "/a", "/b"]
    assert bwrap_box.tmpfs("/tmp", ["--size", "9"]) == ["--size", "9", "--tmpfs", "/tmp"]
    assert bwrap_box.remount_ro() == ["--remount-ro", "/"]


@pytest.mark.parametrize("shared", [False, True])
def test_a_kernel_writes_only_its_two_folders(shared, tmp_path, monkeypatch):
    """The run folder and the working folder; the course's files are read-only (red team:
    a kernel appended ``os._exit`` to them, for the next kernel of the warm sandbox)."""
    monkeypatch.setattr(sandbox, "bwrap", lambda: BWRAP)
    env = sandbox.kernel_env({"PATH": "/usr/bin", "GITHUB_TOKEN": "secret", "TZ": "UTC"},
                             EXTRA="1")
    assert "GITHUB_TOKEN" not in env and env["TZ"] == "UTC" and env["EXTRA"] == "1"
    assert env["PYTHONPATH"] == sandbox.COURSE_DIR and env["HOME"] == "/tmp"
    run, course, work = tmp_path / "run", tmp_path / "course", tmp_path / "work"
    box = sandbox.kernel_box(run, course, work, "/submission", env, shared=shared)
    line = bwrap_box.command(BWRAP, box, ["python", "-m", "autograder.kernel_launch"])
    assert_isolated(line, "python")
    assert mounts(line, "--bind") == [(str(run), str(run)), (str(work), "/submission")]
    assert (str(course), sandbox.COURSE_DIR) in mounts(line, "--ro-bind")
    assert env_of(line) == env
    assert line[line.index("--chdir") + 1] == "/submission"
    # The warm sandbox: kernels follow one another, so nothing else may be written, and
    # its command is PID 1.
    assert (mounts(line, "--remount-ro") != []) is shared
    head = line[:line.index("--")]
    assert ("--as-pid-1" in head) is shared
    if shared:
        assert [head[i + 1] for i, a in enumerate(head) if a == "--remount-ro"] == ["/", "/dev"]
        assert head.index("--remount-ro") > max(i for i, a in enumerate(head) if a == "--bind")


def test_system_binds_are_read_only_and_leave_out_gpus_when_asked(monkeypatch):
    binds = sandbox.system_binds(gpu=False)
    assert "--bind" not in binds and "--dev-bind-try" not in binds
    assert ("/usr", "/usr") in [(binds[i + 1], binds[i + 2]) for i, a in enumerate(binds)
                                if a == "--ro-bind"]


@pytest.fixture
def sandboxed(monkeypatch):
    """The probes' and Rust's modules as where bubblewrap can start, without starting it."""
    for module in (probe, peak_probe_program, torch_probe, rust_toolchain):
        monkeypatch.setattr(module, "bwrap", lambda: BWRAP)
        monkeypatch.setattr(module, "sandbox_error", lambda: None)


def test_the_probes_write_nothing_but_their_own_tmp(sandboxed, tmp_path):
    course = tmp_path / "course"
    lines = {"probe": probe.command(), "peak probe": peak_probe_program.command()[0],
             "ex05 probe": torch_probe.command(course)}
    for name, line in lines.items():
        assert_isolated(line, probe.sys.executable)
        assert mounts(line, "--bind") == [], name
        head = line[:line.index("--")]
        assert "/" in [head[i + 1] for i, a in enumerate(head) if a == "--remount-ro"], name
        assert line[line.index("--chdir") + 1] == "/tmp", name
        assert "-I" in line[line.index("--"):], name  # isolated mode: no user site, no cwd
    assert "--dev-bind-try" not in lines["peak probe"]  # GPU memory is in no cgroup
    assert (str(course), str(course)) in mounts(lines["ex05 probe"], "--ro-bind")
    assert env_of(lines["peak probe"]) == peak_probe_program.ENV


def test_a_rust_program_sees_only_its_binary_and_libraries(sandboxed, tmp_path):
    binary = tmp_path / "prog"
    line = rust_toolchain.run_command(binary, ("/lib/x86_64-linux-gnu",), cpu=2)
    bw = line[line.index(BWRAP):]  # after the resource limits' wrapper
    assert bw[:1 + len(ISOLATION)] == [BWRAP, *ISOLATION]
    head = bw[:bw.index("--")]
    assert "--proc" not in head and "--new-session" in head and env_of(bw) == {}
    assert mounts(bw, "--ro-bind") == [("/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"),
                                      (str(binary), "/program")]
    assert mounts(bw, "--bind") == [] and bw[bw.index("--") + 1:] == ["/program"]


FLAGS = {"--unshare-all", "--die-with-parent", "--clearenv", "--setenv", "--bind",
         "--ro-bind", "--tmpfs", "--remount-ro", "--cap-drop", "--dev-bind-try"}


def options_spelled(source: str) -> list[tuple[int, str]]:
    """(line, option) for each string constant of ``source`` that is a bubblewrap option."""
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and node.value in FLAGS]


def test_no_module_but_bwrap_box_spells_a_bubblewrap_option():
    """A command line assembled by hand elsewhere could leave the isolation out: every
    string constant of the package that is a bubblewrap option lives in bwrap_box."""
    found = [f"{path.relative_to(PACKAGE)}:{line} {option}"
             for path in sorted(PACKAGE.rglob("*.py")) if path.name != "bwrap_box.py"
             for line, option in options_spelled(path.read_text(encoding="utf-8"))]
    assert found == []


def test_the_option_scan_finds_a_planted_one():
    assert options_spelled('x = 1\nline = ["bwrap", "--ro-bind", "/", "/"]') == [(2, "--ro-bind")]


def test_kill_takes_the_whole_group_so_an_orphan_holding_the_pipes_dies_too():
    """A sandbox killed in its first milliseconds, before bubblewrap's inner process has
    armed ``--die-with-parent``, leaves that process blocked for ever holding the sandbox's
    pipes (bubblewrap issue 633). :func:`bwrap_box.kill` kills the sandbox's whole process
    group, so reading the pipes to their end returns. Stand-in: sh, whose child holds
    them; with ``proc.kill()`` alone, ``communicate`` times out."""
    proc = subprocess.Popen(["sh", "-c", "sleep 600 & echo started; exec sleep 600"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout.readline() == b"started\n"  # the child is there
        bwrap_box.kill(proc)
        assert proc.communicate(timeout=60) == (b"", b"")
        assert proc.returncode == -signal.SIGKILL
        bwrap_box.kill(proc)  # a sandbox already gone: no error
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
