"""autograder.kernel_messages: what the grader's session does with a message a learner's
kernel signed but the grader cannot read (unit tests: no kernel, no sandbox). The class
run of tests/test_grading_hostile.py shows the status that follows."""

from __future__ import annotations

import sys

import pytest
from jupyter_client.session import Session

from autograder.kernel_messages import GraderSession, UnreadableMessage


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
