"""An exercise notebook runs where it is opened: downloaded, in Colab, on Binder.

Every exercise's set-up cell (nbgrader id ``setup``) starts with the lines of
``tools/add_install_block.py`` (BLOCK): when ``autograder`` cannot be imported, in an
IPython kernel, it installs the course package, from a course wheel beside the notebook
(offline, ``--no-index``) or else from the repository ``_config.yml`` names, and says so in
one line; when the install fails it says what to do in one sentence. Where ``autograder``
imports (the repository, grading) and in the course's plain-Python runners it does nothing.

The fresh-venv test (slow: two kernels and a ``check`` in a new virtual environment) runs a
downloaded exercise 1, filled in, in a folder that holds only it and the course wheel,
offline, in a virtual environment that sees the course's dependencies but not the course.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
import zipfile
from pathlib import Path

import nbformat
import pytest
import yaml
from conftest import REPO
from submissions import filled_notebook

import autograder
from autograder.config import EXERCISES, SOLUTIONS
from autograder.notebook import grade_id, is_test_cell

sys.path.insert(0, str(REPO / "tools"))
from add_install_block import BLOCK, TAG, setup_cell  # noqa: E402

ASSIGNMENTS = list(autograder.ASSIGNMENTS)
EX01 = "ex01_python_attention"
EX08 = "ex08_rust_attention"
NOTEBOOKS = [d / a / f"{a}.ipynb" for d in (SOLUTIONS, EXERCISES) for a in ASSIGNMENTS]
INSTALLED = re.compile(r"^Installed the course package \(autograder\) from "
                       r"(attention_course-[^ ]+\.whl)\.\n$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# pip never reaches an index here, whatever the set-up cell asks for: port 9 refuses.
OFFLINE = {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_FIND_LINKS": "",
           "PIP_RETRIES": "0", "PIP_TIMEOUT": "2", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def _wheel_prefix() -> str:
    """The file name prefix of the course's wheel: its pyproject name, normalised (PEP 427)."""
    name = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
    return re.sub(r"[-_.]+", "_", name).lower() + "-"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_setup_cell_starts_with_the_install_block(path):
    """First in the cell, before anything imports the course; the cell locked as before,
    folded away on the website (hide-input); the repository and the wheel's name those of
    _config.yml and pyproject.toml; offline (--no-index) when a wheel is there."""
    nb = nbformat.read(path, as_version=4)
    cell = setup_cell(nb)
    assert cell.source.startswith(BLOCK + "\n"), path
    assert cell.source.index("autograder.") > len(BLOCK)  # nothing imports it before
    assert TAG in cell.metadata.get("tags", []), path
    meta = cell.metadata["nbgrader"]
    assert meta["locked"] and not meta["solution"] and not meta["grade"], meta
    assert cell.metadata.get("editable") is False and cell.metadata.get("deletable") is False
    repository = yaml.safe_load((REPO / "_config.yml").read_text())["repository"]["url"]
    assert f'COURSE_REPOSITORY = "{repository}"' in BLOCK
    assert f'glob.glob("{_wheel_prefix()}*.whl")' in BLOCK
    assert '["--no-index", "--find-links", "."] if wheels' in BLOCK


def _plain(source: str) -> str:
    """A cell without its magic lines, as the checker and the probe read it."""
    return "\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!")))


def test_plain_python_runners_never_install(tmp_path):
    """The standard-library probe (``python -I -S``: no ``autograder``, no IPython) runs the
    set-up cell: the block does nothing there (no pip, which would install into the
    grader's environment; no output), and the rest of the cell runs."""
    (tmp_path / f"{_wheel_prefix()}0.0.0-py3-none-any.whl").write_text("not a wheel")
    source = _plain(setup_cell(nbformat.read(EXERCISES / EX01 / f"{EX01}.ipynb",
                                             as_version=4)).source)
    script = source + "\nprint(sorted(n for n in ('math', 'subprocess', 'pip') if n in globals()))\n"
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", script], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout == "['math']\n"


def _kernel_spec(root: Path, name: str, python: Path, env: dict) -> None:
    spec = root / "kernels" / name
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": name, "language": "python", "env": env}), encoding="utf-8")


def _run(nb, folder: Path, kernel: str, allow_errors: bool = False):
    from nbclient import NotebookClient

    NotebookClient(nb, kernel_name=kernel, timeout=300, allow_errors=allow_errors,
                   resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def test_setup_cell_in_the_repository_prints_nothing_and_runs_no_pip(tmp_path, monkeypatch):
    """Where ``autograder`` imports, the set-up cell does nothing more than before: no
    output, no pip (a broken wheel beside the notebook would make pip fail), and none of
    the block's install-time names."""
    folder = tmp_path / "here"
    folder.mkdir()
    (folder / f"{_wheel_prefix()}0.0.0-py3-none-any.whl").write_text("not a wheel")
    _kernel_spec(tmp_path / "jupyter", "repo", Path(sys.executable),
                 {"PYTHONPATH": str(REPO)})
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    released = nbformat.read(EXERCISES / EX01 / f"{EX01}.ipynb", as_version=4)
    nb = nbformat.v4.new_notebook(cells=[
        setup_cell(released),
        nbformat.v4.new_code_cell("print(sorted(n for n in ('wheels', 'pip', 'subprocess') "
                                  "if n in globals()))")])
    _run(nb, folder, "repo")
    assert nb.cells[0].outputs == []
    assert [o.get("text") for o in nb.cells[1].outputs] == ["[]\n"]


def _bundle_course():
    """setup.py's bundle_course, imported without running setup()."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("course_setup", REPO / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.bundle_course


def _assert_bundle_holds_no_solution(read) -> None:
    """The bundle (``read(relative path) -> text``) has every exercise: its release as it
    is, and a source whose test cells are solutions/' (hidden parts) and whose every other
    cell is the release's (stubs, not solutions)."""
    import autograder.exercises as registry

    for ex in registry.ASSIGNMENTS:
        release = (EXERCISES / ex / f"{ex}.ipynb").read_text(encoding="utf-8")
        assert read(f"release/{ex}/{ex}.ipynb") == release
        bundled = nbformat.reads(read(f"source/{ex}/{ex}.ipynb"), as_version=4)
        whole = {grade_id(c): c.source for c in
                 nbformat.read(SOLUTIONS / ex / f"{ex}.ipynb", as_version=4).cells
                 if is_test_cell(c)}
        released = nbformat.reads(release, as_version=4).cells
        assert len(bundled.cells) == len(released), ex
        for mine, theirs in zip(bundled.cells, released):
            assert mine.source == (whole[grade_id(mine)] if is_test_cell(mine) else
                                   theirs.source), (ex, grade_id(mine))
        assert "### BEGIN SOLUTION" not in read(f"source/{ex}/{ex}.ipynb"), ex
        assert any("### BEGIN HIDDEN TESTS" in s for s in whole.values()), ex


def test_bundle_has_every_exercise_and_no_solution(tmp_path):
    """What setup.py puts in the wheel, built from this checkout (fast: no wheel)."""
    import autograder.exercises as registry

    assert _bundle_course()(REPO, tmp_path) == list(registry.ASSIGNMENTS)
    _assert_bundle_holds_no_solution(lambda rel: (tmp_path / rel).read_text(encoding="utf-8"))


def test_private_release_bundles_nothing(tmp_path):
    """A course folder without solutions/ (a class's private release) puts no notebook in
    the wheel, so its check keeps the hidden parts pending."""
    shutil.copytree(EXERCISES, tmp_path / "course" / "exercises")
    assert _bundle_course()(tmp_path / "course", tmp_path / "out") == []
    assert not (tmp_path / "out").exists()


def build_wheel(out: Path) -> Path:
    """The course wheel, built offline from a copy of this checkout's package (a build in
    the checkout would leave build/ there, whose stale files a later wheel would carry)."""
    src = out / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py"):
        shutil.copy2(REPO / name, src)
    for name in ("autograder", "solutions", "exercises"):
        shutil.copytree(REPO / name, src / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "--no-index", "--quiet", "-w", str(out),
                           str(src)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **OFFLINE})
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = out.glob(f"{_wheel_prefix()}*.whl")
    return wheel


def _fresh_venv(root: Path) -> tuple[Path, Path]:
    """A new virtual environment that sees this one's site-packages through a plain path
    line in a .pth file (whose own .pth files, the editable course among them, are not
    processed): Jupyter and the course's dependencies, not the course. (python, its
    site-packages)."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.check_output(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        text=True).strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python, site


@pytest.mark.slow  # a wheel, a fresh venv, two kernels and a check there: about 30 s
def test_downloaded_exercise_installs_the_wheel_offline_and_checks(tmp_path, monkeypatch):
    start = time.monotonic()
    wheel_dir = tmp_path / "wheel"
    wheel_dir.mkdir()
    wheel = build_wheel(wheel_dir)
    names = zipfile.ZipFile(wheel).namelist()
    assert wheel.stat().st_size < 1_000_000, wheel.stat().st_size
    for needed in ("autograder/in_notebook.py", "autograder/testing.py",
                   "autograder/checks/ex01.py", "autograder/cli.py", "autograder/notebook.py"):
        assert needed in names, needed
    assert not any(n.startswith(("tests/", "solutions/", "exercises/")) for n in names)
    assert "autograder/reference/rust/attention.rs" in names  # ex08's checks build it
    zf = zipfile.ZipFile(wheel)
    _assert_bundle_holds_no_solution(
        lambda rel: zf.read(f"autograder/course/{rel}").decode("utf-8"))

    python, site = _fresh_venv(tmp_path)
    env = {**OFFLINE, "PYTHONPATH": "", "PYTHONNOUSERSITE": "1", "MPLBACKEND": "Agg"}
    clean = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **env}
    before = subprocess.run([str(python), "-c", "import autograder"], cwd=tmp_path,
                            capture_output=True, text=True, env=clean)
    assert before.returncode != 0 and "No module named 'autograder'" in before.stderr

    _kernel_spec(tmp_path / "jupyter", "fresh", python, env)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))

    # Without a usable wheel and offline, the cell stops with one sentence, no traceback.
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / wheel.name).write_text("not a wheel")
    nb = nbformat.v4.new_notebook(cells=[setup_cell(filled_notebook(EX01))])
    _run(nb, broken, "fresh", allow_errors=True)
    (error,) = nb.cells[0].outputs
    assert error.output_type == "error" and error.ename == "CourseSetupError"
    (line,) = [ANSI.sub("", t) for t in error.traceback]
    assert line.startswith(f"Could not install the course package from {wheel.name}: ")
    assert line.endswith("run this cell again.") and "Traceback" not in line

    # A folder that holds only the downloaded notebook, filled in, and the wheel.
    folder = tmp_path / "downloads"
    folder.mkdir()
    shutil.copy2(wheel, folder)
    path = folder / f"{EX01}.ipynb"
    nbformat.write(filled_notebook(EX01), path)
    assert sorted(p.name for p in folder.iterdir()) == sorted([wheel.name, path.name])
    nb = _run(nbformat.read(path, as_version=4), folder, "fresh")
    setup = setup_cell(nb)
    texts = [o.get("text", "") for o in setup.outputs]
    assert len(texts) == 1 and INSTALLED.match(texts[0]), setup.outputs
    assert INSTALLED.match(texts[0]).group(1) == wheel.name
    tests = [c for c in nb.cells if is_test_cell(c)]
    assert tests and all(o.output_type != "error" for c in tests for o in c.outputs)

    after = subprocess.run([str(python), "-c", "import autograder; print(autograder.__file__)"],
                           cwd=folder, capture_output=True, text=True, env=clean)
    assert after.returncode == 0, after.stderr
    assert Path(after.stdout.strip()).is_relative_to(site), after.stdout
    assert not Path(after.stdout.strip()).is_relative_to(REPO)

    # check, far from the repository, gives every verdict: the wheel's bundle has the
    # hidden parts. Exercise 2 (ex08, Rust) also needs the reference crate in the wheel.
    for ex in (EX01, EX08):
        path = folder / f"{ex}.ipynb"
        if ex != EX01:
            nbformat.write(filled_notebook(ex), path)
        proc = subprocess.run([str(python), "-m", "autograder", "check", str(path)],
                              cwd=folder, capture_output=True, text=True, env=clean,
                              timeout=600)
        rows = {ln.split()[0]: ln.split()[3] for ln in proc.stdout.splitlines()
                if re.search(r"\s\d+(\.\d+)? pt\s", ln)}
        graded = [grade_id(c) for c in nbformat.read(SOLUTIONS / ex / f"{ex}.ipynb",
                                                     as_version=4).cells if is_test_cell(c)]
        assert sorted(rows) == sorted(graded), proc.stdout + proc.stderr
        assert set(rows.values()) == {"PASS"}, proc.stdout + proc.stderr
        assert "hidden tests run too" in proc.stdout, proc.stdout
        assert re.search(rf"^{len(graded)} passed, 0 failed, 0 pending$", proc.stdout,
                         re.M), proc.stdout
    print(f"wheel {wheel.stat().st_size} bytes; fresh-venv test {time.monotonic() - start:.1f} s")
