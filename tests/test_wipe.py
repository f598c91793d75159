"""autograder.wipe: a folder a learner's code wrote is emptied whatever the code made of it.

A tree deeper than Python's recursion limit made shutil.rmtree raise RecursionError (its
ignore_errors covers OSError only): the warm sandbox stayed dirty and every later kernel
failed (status error) or every later probe lost its points. A folder without permissions
made rmtree leave it, and what was in it, for the next learner (as any user but root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder import wipe

ROOT = Path(__file__).resolve().parent.parent


def test_a_tree_deeper_than_the_recursion_limit_is_removed(tmp_path, deep_tree):
    deep_tree(tmp_path, 1500)  # Python's recursion limit: 1000
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(RecursionError):  # the failure wipe replaces
        shutil.rmtree(tmp_path / "d", ignore_errors=True)
    assert wipe.empty(tmp_path) is True
    assert os.listdir(tmp_path) == []


def test_a_link_is_removed_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("the grader's")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "link").symlink_to(outside)
    (folder / "file-link").symlink_to(outside / "keep.txt")
    assert wipe.empty(folder) is True
    assert os.listdir(folder) == [] and (outside / "keep.txt").read_text() == "the grader's"


def test_a_folder_that_does_not_exist_is_empty(tmp_path):
    assert wipe.empty(tmp_path / "missing") is True


# Run as a user that is not root (root passes every permission check): a folder the
# learner's code made unreadable and unwritable, a package in it; rmtree leaves both.
LOCKED = """
import os, shutil, sys
from autograder import wipe
folder = sys.argv[1]
os.makedirs(os.path.join(folder, 'locked', 'numpy'))
open(os.path.join(folder, 'locked', 'numpy', '__init__.py'), 'w').close()
os.chmod(os.path.join(folder, 'locked', 'numpy'), 0o500)
os.chmod(os.path.join(folder, 'locked'), 0)
shutil.rmtree(os.path.join(folder, 'locked'), ignore_errors=True)
print('rmtree left', os.listdir(folder))
print('empty', wipe.empty(folder), os.listdir(folder))
"""


def test_a_folder_without_permissions_is_removed_by_a_user_that_is_not_root():
    with tempfile.TemporaryDirectory() as folder:  # not pytest's: only root can enter it
        line = [sys.executable, "-c", LOCKED, folder]
        if os.geteuid() == 0:
            if shutil.which("setpriv") is None:
                pytest.skip("root, and no setpriv to run as another user")
            os.chmod(folder, 0o777)
            line = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", *line]
        proc = subprocess.run(line, capture_output=True, text=True, cwd=ROOT,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)), check=False)
    assert proc.returncode == 0, proc.stderr
    assert "rmtree left ['locked']" in proc.stdout, proc.stdout
    assert "empty True []" in proc.stdout, proc.stdout


def test_the_kept_paths_and_the_folders_above_them_stay_and_nothing_else(tmp_path):
    """The sandbox's /tmp holds the grader's mount points: its run folder and, when the
    course lies under /tmp (a clone in /tmp/cc), its virtual environment. Counting them as
    left-overs stopped every warm sandbox after its first kernel: a whole class 'error'."""
    run, venv = tmp_path / "zygote" / "run", tmp_path / "cc" / ".venv"
    for kept in (run, venv):
        kept.mkdir(parents=True)
        (kept / "inside.txt").write_text("the grader's")
    beside = [tmp_path / "zygote" / "learner.txt", tmp_path / "cc" / "learner",
              tmp_path / "c*", tmp_path / "learner.txt"]
    for path in beside:
        path.mkdir() if path.name == "learner" else path.write_text("x")
    assert wipe.empty(tmp_path, keep=[str(run), venv]) is True
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "cc", "cc/.venv", "cc/.venv/inside.txt", "zygote", "zygote/run", "zygote/run/inside.txt"]


def test_a_name_with_pattern_characters_spares_only_itself(tmp_path, deep_tree):
    """find's -name takes a pattern: a kept 'r*' must not spare 'rest' (here in the
    coreutils step, which a tree too deep for rmtree reaches)."""
    (tmp_path / "r*").mkdir()
    (tmp_path / "rest").mkdir()
    deep_tree(tmp_path / "rest", 1200)
    assert wipe.empty(tmp_path, keep=tmp_path / "r*") is True
    assert os.listdir(tmp_path) == ["r*"]


def test_mount_points_are_read_from_mountinfo():
    text = ("22 27 0:20 / /proc rw,nosuid - proc proc rw\n"
            "40 31 8:1 /tmp/cc/.venv /tmp/cc/.venv ro,relatime - ext4 /dev/sda1 rw\n"
            "41 31 8:1 /x /tmp/a\\040b\\134c rw - ext4 /dev/sda1 rw\n")
    assert wipe.mount_points(text) == ["/proc", "/tmp/cc/.venv", "/tmp/a b\\c"]


def test_kept_folders_get_their_modes_back_up_to_the_top_only(tmp_path):
    """Red team: a kernel made its connection folder read-only and the next learner's
    kernel could not start there. The modes of kept folders and of the folders above them
    up to ``top`` are recorded, and put back; nothing above ``top`` is recorded."""
    run = tmp_path / "sandbox" / "zygote" / "run"
    run.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o750)
    kept = wipe.modes([run, outside], tmp_path / "sandbox")
    assert set(kept) == {str(run), str(run.parent), str(tmp_path / "sandbox"), str(outside)}
    assert kept[str(outside)] == 0o750
    os.chmod(run, 0o555)
    os.chmod(run.parent, 0)
    os.chmod(outside, 0o1777)
    assert wipe.restore_modes(kept)
    assert {p: os.stat(p).st_mode & 0o7777 for p in kept} == kept
    assert wipe.restore_modes({str(tmp_path / "gone"): 0o700}) is False  # not there: say so


def test_a_folder_of_many_entries_is_removed_without_listing_it_whole(tmp_path):
    """Red team: a kernel made millions of entries in one folder; rmtree lists a folder
    whole, and the grader's worker ran out of memory (status error). Folders larger than
    a batch go to coreutils, which stream: Python's memory stays small."""
    import tracemalloc

    many = tmp_path / "work" / "many"
    many.mkdir(parents=True)
    (tmp_path / "one").touch()
    for i in range(5 * wipe.BATCH):  # names of one file: quicker to make than files
        os.link(tmp_path / "one", many / f"f{i:06d}")
    for i in range(wipe.BATCH + 5):  # and a batch and more beside it
        os.link(tmp_path / "one", tmp_path / "work" / f"g{i:06d}")
    tracemalloc.start()
    try:
        assert wipe.empty(tmp_path / "work")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert os.listdir(tmp_path / "work") == []
    assert peak < 4 << 20, peak  # 1.4 MiB; listing the 50,000 entries whole took 8
