"""A failed check in a learner's notebook shows the learner's cell line and the message
(with its hint), not the frames of the course's helpers (autograder.brief_tracebacks)."""

from __future__ import annotations

import re

import nbformat
import pytest
from nbclient import NotebookClient

from autograder import brief_tracebacks

ANSI = re.compile(r"\x1b\[[0-9;]*m")

FAILING_CHECK = """\
from autograder.testing import assert_close, explain
with explain(lambda: "scale the scores by 1/sqrt(d_k), not 1/sqrt(d_v)"):
    assert_close([1.0], [2.0], "attention(Q, K, V)")"""

LEARNER_ERROR = """\
import autograder.testing
def softmax(row):
    return [1 / 0 for _ in row]
softmax([1.0])"""


def _error(source: str, before: str = "") -> tuple[dict, str]:
    cells = [nbformat.v4.new_code_cell(before)] if before else []
    nb = nbformat.v4.new_notebook(cells=cells + [nbformat.v4.new_code_cell(source)])
    NotebookClient(nb, timeout=120, allow_errors=True, kernel_name="python3").execute()
    (out,) = [o for o in nb.cells[-1].outputs if o.output_type == "error"]
    return out, ANSI.sub("", "\n".join(out.traceback))


def test_check_failure_shows_the_cell_and_the_hint_only():
    out, text = _error(FAILING_CHECK)
    assert out.ename == "CheckFailed"
    assert out.evalue.endswith("Hint: scale the scores by 1/sqrt(d_k), not 1/sqrt(d_v).")
    assert re.search(r"Cell In\[\d+\], line 2", text), text
    assert "contextlib" not in text and "testing.py" not in text, text
    assert text.rstrip().endswith(f"CheckFailed: {out.evalue}"), text


def test_without_the_handler_the_helpers_frames_show():
    """The wrong display this module replaces: IPython's own, with contextlib's frame and
    the helper's before the message."""
    _, text = _error(FAILING_CHECK, before="import autograder.testing\n"
                                           "get_ipython().set_custom_exc((), None)")
    assert "contextlib" in text and "testing.py" in text, text


def test_learner_errors_keep_every_frame():
    out, text = _error(LEARNER_ERROR)
    assert out.ename == "ZeroDivisionError"
    assert "in softmax(row)" in text and "1 / 0" in text, text


def test_outside_a_kernel_nothing_is_installed():
    assert brief_tracebacks.install(AssertionError) is False


@pytest.mark.parametrize("name, cut", [("autograder.testing", True), ("contextlib", True),
                                       ("__main__", False), ("autograder_x", False)])
def test_trimmed_cuts_at_the_first_course_or_contextlib_frame(name, cut):
    namespace = {"__name__": name}
    exec("def raiser():\n    raise ValueError('x')", namespace)
    try:
        namespace["raiser"]()
    except ValueError as exc:
        tb = exc.__traceback__
    short = brief_tracebacks.trimmed(tb)
    frames = []
    while short is not None:
        frames.append(short.tb_frame.f_globals["__name__"])
        short = short.tb_next
    assert frames == ([__name__] if cut else [__name__, name])
