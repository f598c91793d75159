"""Hostile submissions found by the adversarial review, graded in one class run beside a
correct one: memory the kernel's resource limits do not count (shared memory, tmpfs files),
a cell printing 200 MB, a JSON bomb, a notebook of too many cells, Jupyter messages the
grader cannot read. Each gets the status the
contract names, and the correct submission beside them its full score.

The memory cap is applied by a memory cgroup per kernel where the grader can make one, and
by a watchdog where it cannot (``$AUTOGRADER_CGROUP`` naming no folder): both are run.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from conftest import grade
from submissions import filled_notebook, write_submission

from autograder import cgroups, kernel_memory, kernel_messages, scratch
from autograder.grading import submission
from autograder.nbgrader_execute import MAX_CELL_OUTPUT
from autograder.notebook import nbgrader_meta

A = "ex01_python_attention"
FULL = 14.0
MEMORY_MB = 448  # an ex01 kernel needs ~180 MiB; each memory hog writes 768 MiB
HOSTILE = Path(__file__).parent / "hostile"
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("hostile")]


def _with_cell(name: str, after: str = "setup"):
    """The correct notebook with the hostile cell ``tests/hostile/NAME.py`` after ``after``."""
    nb = filled_notebook(A)
    idx = next(i for i, c in enumerate(nb.cells) if nbgrader_meta(c).get("grade_id") == after)
    nb.cells.insert(idx + 1, nbformat.v4.new_code_cell((HOSTILE / f"{name}.py").read_text()))
    return nb


def _json_bomb() -> bytes:
    """The correct notebook with 200,000 nested lists in its metadata (421 KB)."""
    text = nbformat.writes(filled_notebook(A))
    deep = "[" * 200_000 + "]" * 200_000
    return text.replace('"metadata": {', '"metadata": {"x": ' + deep + ",", 1).encode()


def _many_cells(n: int):
    nb = filled_notebook(A)
    nb.cells[2:2] = [nbformat.v4.new_markdown_cell("x" * 10) for _ in range(n - len(nb.cells))]
    return nb


def _long_source():
    nb = filled_notebook(A)
    nb.cells.insert(2, nbformat.v4.new_markdown_cell("x" * (submission.MAX_SOURCE_CHARS + 1)))
    return nb


MEMORY_HOGS = {"shm_files": _with_cell("shm_files"), "tmp_files": _with_cell("tmp_files"),
               "shared_mmap": _with_cell("shared_mmap"), "daemon_mmap": _with_cell("daemon_mmap"),
               "disk_files": _with_cell("disk_files")}


def _run(root: Path, corpus: dict, env: dict | None = None, memory_mb: int = 4096):
    for student, nb in corpus.items():
        write_submission(root / "submitted", student, A, nb)
    return grade(root / "submitted", root / "ws", jobs=1, env=env,
                 extra=["--timeout", "20", "--memory-mb", str(memory_mb), "--no-progress"])


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    """The hostile notebooks other than the memory hogs, under the default memory cap."""
    corpus = {"correct": filled_notebook(A), "huge_output": _with_cell("huge_output"),
              "json_bomb": _json_bomb(), "many_cells": _many_cells(submission.MAX_CELLS + 1),
              "long_source": _long_source(),
              "at_the_cell_limit": _many_cells(submission.MAX_CELLS),
              "deep_message": _with_cell("deep_message", after="test_softmax_empty"),
              "replayed_message": _with_cell("replayed_message", after="test_softmax_empty"),
              "invalid_outputs": _with_cell("invalid_outputs")}
    root = tmp_path_factory.mktemp("hostile")
    proc, rows, tests = _run(root, corpus)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return rows, tests, root / "ws"


@pytest.mark.parametrize("how", ["cgroup", "watchdog"])
def test_memory_the_resource_limits_miss_is_capped_for_that_learner_only(tmp_path, how):
    """Shared memory and tmpfs files past the cap: ``out-of-memory`` for each hog, stopped
    in its own cell after the set-up (no test had run), and full marks beside them. Where
    a memory cgroup can be made its limit stops them, elsewhere the watchdog
    (``$AUTOGRADER_CGROUP`` naming no folder: none can be made)."""
    env = None
    if how == "cgroup" and cgroups.cgroup_error() is not None:
        pytest.skip(f"no memory cgroup here: {cgroups.cgroup_error()}")
    if how == "watchdog":
        env = {**os.environ, "AUTOGRADER_CGROUP": str(tmp_path / "no-such-cgroup")}
    hogs = dict(MEMORY_HOGS)
    if how == "cgroup" and scratch.memory_root() is None:  # (a container's small /dev/shm)
        del hogs["disk_files"]  # its folders on disk, which no cgroup counts (contract.md)
    proc, rows, _ = _run(tmp_path, {"correct": filled_notebook(A), **hogs,
                                    "huge_message": _with_cell("huge_message", after="test_kc3")},
                         env=env, memory_mb=MEMORY_MB)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # A 60 MB message, past what the grader takes under this cap: dropped, not decoded (the
    # worker, under the cap too, ran out of memory: error). The kernel's output after it is
    # lost (each later cell waits for it 4 s: so the cell comes last).
    row = rows["huge_message"]
    assert (row["status"], float(row["score"])) == ("graded", 14.0), row
    for student in hogs:
        row = rows[student]
        assert row["status"] == "out-of-memory", row
        assert f"memory cap ({MEMORY_MB} MiB" in row["detail"], row
        if student != "daemon_mmap":  # the cgroup kills the daemon only, the watchdog all
            assert float(row["score"]) == 0.0, row
    assert rows["correct"]["status"] == "graded" and float(rows["correct"]["score"]) == FULL


def test_huge_output_is_cut_and_every_test_keeps_its_points(class_run):
    rows, _, ws = class_run
    row = rows["huge_output"]
    assert row["status"] == "graded" and float(row["score"]) == FULL, row
    graded = ws / "autograded" / "huge_output" / A / f"{A}.ipynb"
    nb = nbformat.read(graded, as_version=4)
    texts = ["".join(o.get("text", "")) for c in nb.cells for o in c.get("outputs", [])
             if o.get("output_type") == "stream"]
    assert sum(map(len, texts)) < 2 * MAX_CELL_OUTPUT
    assert any("[output cut: this cell's output passed 1 MiB" in t for t in texts)
    assert (ws / row["feedback"]).is_file()


@pytest.mark.parametrize("student, said", [
    ("deep_message", "a message nested deeper than the grader reads"),
    ("replayed_message", "a message the grader cannot read (ValueError: Duplicate Signature"),
])
def test_a_kernel_message_the_grader_cannot_read_is_tampering_for_that_learner(
        class_run, student, said):
    """A learner's kernel can sign anything: a display nested 1,500 deep, a message sent
    twice. Either is a broken protocol (status tampering, the cell named), not the grader's
    own failure ('error', retried on every run): the three tests before it keep their
    points, the later ones score 0, and the correct learner graded next gets full marks."""
    rows, tests, _ = class_run
    row = rows[student]
    assert row["status"] == "tampering", row
    assert said in row["detail"] and "while running a cell of your own" in row["detail"], row
    assert float(row["score"]) == 3.0, row
    mine = {test: float(t["score"]) for test, t in tests[student].items()}
    assert mine["test_softmax_empty"] == 1.0 and mine["test_attention_worked_example"] == 0.0
    assert rows["correct"]["status"] == "graded" and float(rows["correct"]["score"]) == FULL


def test_outputs_no_notebook_may_hold_are_dropped_and_the_tests_keep_their_points(class_run):
    """Outputs the kernel sent that are not valid in a notebook (a number for a display's
    value, a stream named stdin\\0, an execution count "NaN", a lone surrogate): nbgrader
    could not write the graded notebook ('error'). Each is a note now, the count none."""
    rows, _, ws = class_run
    row = rows["invalid_outputs"]
    assert (row["status"], float(row["score"])) == ("graded", FULL), row
    nb = nbformat.read(ws / "autograded" / "invalid_outputs" / A / f"{A}.ipynb", as_version=4)
    nbformat.validate(nb)
    texts = ["".join(o.get("text", "")) for c in nb.cells for o in c.get("outputs", [])]
    assert texts.count(kernel_messages.DROPPED) == 3, texts  # the count "NaN" drops its result
    assert "lone \ufffd surrogate\n" in texts, texts
    assert (ws / row["feedback"]).is_file()


@pytest.mark.parametrize("student, reason", [
    ("json_bomb", "nested deeper than the 64 levels"),
    ("many_cells", f"{submission.MAX_CELLS + 1} cells, more than the {submission.MAX_CELLS}"),
    ("long_source", f"more than the {submission.MAX_SOURCE_CHARS:,}"),
])
def test_notebooks_beyond_the_limits_are_refused_at_the_door(class_run, student, reason):
    rows, _, _ = class_run
    assert rows[student]["status"] == "invalid-notebook", rows[student]
    assert reason in rows[student]["detail"], rows[student]


def test_a_notebook_at_the_cell_limit_is_graded(class_run):
    rows, _, _ = class_run
    row = rows["at_the_cell_limit"]
    assert row["status"] == "graded" and float(row["score"]) == FULL, row


def test_limits_of_a_notebook_name_what_is_over():
    assert submission.beyond_limits({"cells": []}) == ""
    assert "3 levels" not in submission.beyond_limits({"cells": [], "m": [[[1]]]})
    deep: list = []
    for _ in range(submission.MAX_DEPTH):
        deep = [deep]
    assert "nested more than 64" in submission.beyond_limits({"cells": [], "m": deep})
    assert submission.beyond_limits({"cells": [{"source": ["ab", "c"]}] * 3}) == ""


def test_the_resident_memory_sum_counts_tmpfs_and_shared_pages(tmp_path):
    """The watchdog's measure: a shared mapping of this process counts."""
    import mmap

    before = kernel_memory.resident_bytes([os.getpid()], [])
    m = mmap.mmap(-1, 64 << 20)
    m[:] = b"\1" * len(m)
    after = kernel_memory.resident_bytes([os.getpid()], [])
    m.close()
    assert after - before >= 60 << 20, (before, after)
    assert kernel_memory.mode() in ("watchdog", "cgroup v1", "cgroup v2")
    assert (kernel_memory.mode() == "watchdog") == (cgroups.cgroup_error() is not None)


def test_the_watchdog_counts_a_kernel_s_folders_blocks_and_entries(tmp_path):
    """A folder on a tmpfs that others share (statvfs says nothing of it): its files'
    allocated blocks (fallocate included), each entry at least its inode's KiB, counted
    until past the cap and no further (a learner's million files cost one scan)."""
    (tmp_path / "sub").mkdir()
    with open(tmp_path / "sub" / "big", "wb") as f:
        os.posix_fallocate(f.fileno(), 0, 8 << 20)
    for i in range(100):
        (tmp_path / f"empty{i}").touch()
    counted = kernel_memory.folder_bytes(str(tmp_path), 2**40)
    assert (8 << 20) + 101 * kernel_memory.ENTRY_BYTES <= counted <= (9 << 20), counted
    for i in range(1000):
        (tmp_path / "sub" / f"more{i}").touch()
    assert kernel_memory.folder_bytes(str(tmp_path / "sub"), 10 * kernel_memory.ENTRY_BYTES) \
        in (11 * kernel_memory.ENTRY_BYTES, (8 << 20))  # stopped at the first entry past it
    assert kernel_memory.resident_bytes([], [], [str(tmp_path)]) == \
        kernel_memory.folder_bytes(str(tmp_path), 2**40) >= counted + 1000 * 1024
    assert kernel_memory.folder_bytes(str(tmp_path / "gone"), 2**40) == 0


def test_output_arriving_late_is_never_called_a_timeout():
    """nbclient's IOPub timeout comes after the cell ended: were it ever to end a run, the
    row says what happened, never that a cell ran past the time limit."""
    from autograder.grading.autograde import classify_failure

    log = ("nbclient.exceptions.CellTimeoutError: A cell timed out while it was being "
           "executed, after 4 seconds.\nThe message was: Timeout waiting for IOPub output.\n")
    status, detail = classify_failure(log)
    assert status.value == "error" and "not a time limit" in detail, (status, detail)
    status, _ = classify_failure("CellTimeoutError: Timeout waiting for execute reply (20s)")
    assert status.value == "timeout"
