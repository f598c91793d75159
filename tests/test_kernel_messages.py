"""autograder.kernel_messages: what the grader's session does with a message a learner's
kernel signed but the grader cannot read (unit tests: no kernel, no sandbox). The class
run of tests/test_grading_hostile.py shows the status that follows."""

from __future__ import annotations

import sys

import pytest
from jupyter_client.session import Session

from autograder.kernel_messages import (DROPPED, GraderSession, UnreadableMessage, max_message_bytes,
                                        repair_outputs)


def _signed(session: Session, content) -> list[bytes]:
    """The frames of a stream message with ``content``, as the kernel's session sends it."""
    frames = session.serialize(session.msg("stream", content))
    return frames[frames.index(b"<IDS|MSG>") + 1:]


def _deep(depth: int):
    nested = []
    for _ in range(depth):
        nested = [nested]
    return nested


@pytest.fixture
def pair():
    """The kernel's session and the grader's, sharing a key."""
    kernel = Session(key=b"k" * 16)
    return kernel, GraderSession(key=kernel.key)


def test_a_plain_message_reads_as_jupyter_client_reads_it(pair):
    kernel, grader = pair
    frames = _signed(kernel, {"name": "stdout", "text": "hi"})
    ours, theirs = grader.deserialize(list(frames)), Session(key=kernel.key).deserialize(frames)
    assert ours["content"] == {"name": "stdout", "text": "hi"}
    assert ours == theirs


def test_json_nested_deeper_than_python_reads_is_unreadable(pair):
    kernel, grader = pair
    limit = sys.getrecursionlimit()
    frames = _signed(kernel, {"name": "stdout", "text": "x"})
    frames[-1] = ("[" * 1500 + "]" * 1500).encode()  # the kernel signs whatever it sends
    frames[0] = kernel.sign(frames[1:])
    with pytest.raises(RecursionError):
        Session(key=kernel.key).deserialize(list(frames))  # jupyter_client's own
    with pytest.raises(UnreadableMessage, match="nested deeper than the grader reads"):
        grader.deserialize(frames)
    assert sys.getrecursionlimit() == limit


def test_a_message_sent_twice_is_unreadable_the_second_time(pair):
    kernel, grader = pair
    frames = _signed(kernel, {"name": "stdout", "text": "twice"})
    grader.deserialize(list(frames))
    with pytest.raises(UnreadableMessage, match=r"ValueError: Duplicate Signature\)$"):
        grader.deserialize(list(frames))


@pytest.mark.parametrize("header", [b"not json", b"[1, 2]", b"{}"])
def test_a_header_that_is_not_a_message_header_is_unreadable(pair, header):
    kernel, grader = pair
    frames = _signed(kernel, {"name": "stdout", "text": "x"})
    frames[1] = header
    frames[0] = kernel.sign(frames[1:5])
    with pytest.raises(UnreadableMessage, match="a message the grader cannot read"):
        grader.deserialize(frames)


def test_outputs_no_notebook_may_hold_are_repaired_and_a_valid_notebook_is_left_alone():
    import nbformat

    good = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
    good.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="ok\n")]
    before = nbformat.writes(good)
    assert repair_outputs(good) == 0 and nbformat.writes(good) == before
    bad = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
    cell = bad.cells[0]
    cell.execution_count = "NaN"
    cell.outputs = [nbformat.from_dict(o) for o in (
        {"output_type": "stream", "name": "stdout", "text": "lone \udfff surrogate\n"},
        {"output_type": "display_data", "data": {"weird/type": 5}, "metadata": {}},
        {"output_type": "stream", "name": "stdout", "text": "kept\n"})]
    assert repair_outputs(bad) == 1
    assert cell.execution_count is None
    assert [o.get("text") for o in cell.outputs] == ["lone \ufffd surrogate\n", DROPPED, "kept\n"]
    nbformat.validate(bad)
    nbformat.writes(bad).encode("utf-8")  # raised UnicodeEncodeError before


def test_the_largest_frame_taken_is_a_sixteenth_of_the_cap_and_at_least_8_mib():
    assert max_message_bytes(0) == -1  # no cap: no limit
    assert max_message_bytes(448 * 2**20) == 28 * 2**20  # the red team's 60 MB: dropped
    assert max_message_bytes(4096 * 2**20) == 256 * 2**20
    assert max_message_bytes(64 * 2**20) == 8 * 2**20
