"""The graded kernel holds nothing hidden (issue 23): a submission searches its own memory.

A correct ex01 submission whose ``softmax`` (and a correct ex05 one whose
``scaled_dot_product_attention``, a kernel with torch and the checker's tensors and
modules crossing, and an ex07 one whose ``train_tiny_transformer``, a kernel with the
helpers its notebook gives), the first time a check calls it, searches the
kernel for the hidden world: modules and functions of ``autograder.checks`` and
``autograder.reference`` among every object ``gc`` knows, and, through ``/proc/self/mem``,
every readable byte of its address space for the knowledge checks' docstring, the checks'
and the reference's own names and docstrings, and the binary doubles of three exercises'
expected answers. It raises (and so loses points) when it finds any. The needles are kept
XOR-ed in the source (the cell's own text is in the kernel's memory) and built in place.

The control runs the same search in a Python that has imported the checks: it must find
them, so the search is one that can fail.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, grade
from submissions import filled_notebook, reference_solutions, write_submission

from autograder.sandbox import sandbox_error

A = "ex01_python_attention"
KEY = 0x5A
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cheats"),
              pytest.mark.skipif(sandbox_error() is not None, reason="no sandbox here")]


def _needles(assignment: str = "") -> list[bytes]:
    from autograder.checks import knowledge

    text = [knowledge.__doc__.split("\n")[0], "def softmax_matches_reference",
            "attention_rejects_bad_input", "Scaled dot-product attention in pure Python "
            "(reference for", "knowledge_check = _knowledge.check_for",
            "def sdpa_matches_torch", "def forbid_torch_attention",
            "Scaled dot-product and multi-head attention in PyTorch (reference for",
            "def block_matches_reference",
            "Transformer blocks, stacks and two tiny models (reference for"]
    doubles = [knowledge.ANSWERS["ex04_positional_encoding"]["kc1"],
               knowledge.ANSWERS["ex06_tiled_attention"]["kc2"]]
    if assignment != "ex07_transformer":  # cos(2): ex07's given encodings compute it
        doubles.append(knowledge.ANSWERS["ex04_positional_encoding"]["kc3"])
    return [t.encode() for t in text] + [struct.pack("<d", d) for d in doubles]


def search_source(assignment: str = "") -> str:
    """The search, as Python source (``_hidden_found()`` returns what it found)."""
    xored = [bytes(b ^ KEY for b in n) for n in _needles(assignment)]
    return f'''
def _hidden_found():
    import ctypes, gc, os, sys
    needles = []
    for x in {xored!r}:
        b = bytearray(len(x))
        for i, v in enumerate(x):
            b[i] = v ^ {KEY}
        needles.append(b)
    def where(b):
        return ctypes.addressof((ctypes.c_char * len(b)).from_buffer(b))
    buf = bytearray(1 << 20)
    skip = [(where(b), where(b) + len(b)) for b in needles + [buf]]
    found = [n for n in list(sys.modules) if n.startswith(("autograder.checks",
                                                             "autograder.reference"))]
    for obj in gc.get_objects():
        try:  # (some of torch's objects raise when asked for any attribute)
            code = getattr(obj, "__code__", None)
            name = getattr(code, "co_filename", "") if code is not None else ""
        except BaseException:
            continue
        if isinstance(name, str) and ("autograder/checks" in name or
                                      "autograder/reference" in name):
            found.append(name)
            break
    fd = os.open("/proc/self/mem", os.O_RDONLY)
    with open("/proc/self/maps") as f:
        regions = [ln.split() for ln in f]
    view = memoryview(buf)
    for fields in regions:
        lo, hi = (int(x, 16) for x in fields[0].split("-"))
        if not fields[1].startswith("r") or (len(fields) > 5 and fields[5] == "[vvar]"):
            continue
        off = lo
        while off < hi:
            size = min(len(buf), hi - off)
            try:
                n = os.preadv(fd, [view[:size]], off)
            except OSError:
                break
            for needle in needles:
                pos = buf.find(needle, 0, n)
                while pos != -1:
                    at = off + pos
                    if not any(a <= at < b for a, b in skip):
                        found.append(bytes(needle[:24]).hex())
                    pos = buf.find(needle, pos + 1, n)
            off += max(1, size - 64)
    os.close(fd)
    return found
'''


def test_the_search_finds_the_hidden_world_where_it_is():
    """Control: in a Python that imported the checks (as the grader's checker does)."""
    code = ("import autograder.checks.ex01, autograder.checks.ex04, autograder.checks.ex05\n" +
            search_source() +
            "\nprint(len(_hidden_found()))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) >= 3


@pytest.mark.parametrize("assignment,name,full", [
    (A, "softmax", 14.0), ("ex05_torch_attention", "scaled_dot_product_attention", 27.0),
    ("ex07_transformer", "train_tiny_transformer", 21.0)])
def test_a_graded_kernel_holds_no_reference_check_or_answer(tmp_path, assignment, name, full):
    source = reference_solutions(assignment)[name]
    cell = search_source(assignment) + "\n_searched = []\n" + source.replace(
        f"def {name}(", f"def _{name}(") + f'''

def {name}(*args, **kwargs):
    if not _searched:
        _searched.append(_hidden_found())
    if _searched[0]:
        raise RuntimeError(f"found in the kernel: {{_searched[0][:5]}}")
    return _{name}(*args, **kwargs)
'''
    write_submission(tmp_path / "subs", "searcher", assignment,
                     filled_notebook(assignment, {name: cell}))
    proc, rows, tests = grade(tmp_path / "subs", tmp_path / "ws", jobs=1,
                              extra=["--no-progress"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = rows["searcher"]
    assert (row["status"], float(row["score"])) == ("graded", full), (row, {
        t: r["score"] for t, r in tests["searcher"].items()})
    assert Path(tmp_path / "ws" / "grades.csv").is_file()
