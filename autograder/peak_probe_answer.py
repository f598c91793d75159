"""The peak probe's answer read by the grader (:func:`read_answer`): one JSON line, then the
rows of the result it sends, each checked before it is believed (a learner's code runs in
the probe); what was measured is a :class:`Measured`. Pure: no process here."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

MIB = 2**20
MAX_HEADER = 64 * 2**10  # the probe's answer: one JSON line, then the rows it sends
MAX_ROWS_BYTES = 8 * MIB


@dataclass
class Measured:
    """What the probe measured of one call.

    ``peak``: bytes (None when the call did not complete); ``how``: how it was measured;
    ``value``: the result's ``type`` name, ``ndarray`` (bool), ``shape``, ``dtype`` and
    ``rows`` (the whole result, or the requested rows, as a float64 array, when it is a 2-D
    float64 array);
    ``raised``: the exception the call raised (``type``, ``kinds``, ``message``);
    ``missing``: the solution cells define no such name; ``error``: why the probe gave no
    answer (time limit, memory limit, a broken answer); ``baseline``: bytes resident in
    the probe when the learner's code began (cgroup only)."""

    how: str
    peak: int | None = None
    value: dict = field(default_factory=dict)
    raised: dict | None = None
    missing: bool = False
    error: str = ""
    baseline: int | None = None
    seconds: float = 0.0


class BrokenAnswer(Exception):
    """The probe's answer is not one its program writes."""


def read_header(out: bytearray) -> dict:
    """The answer's first line, a JSON object; raises :class:`BrokenAnswer`."""
    line = bytes(out[:out.index(b"\n")]) if b"\n" in out else b""
    try:
        reply = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BrokenAnswer("its answer is not JSON") from None
    if type(reply) is not dict:
        raise BrokenAnswer("its answer is not a JSON object")
    return reply


def read_answer(out: bytearray, rows: list[int] | None, measured: Measured) -> None:
    """Fill ``measured`` from the probe's answer ``out`` (checked before it is read; the
    rows asked for, None: all); raises :class:`BrokenAnswer`."""
    reply = read_header(out)
    data = bytes(out[out.index(b"\n") + 1:])
    if reply.get("missing") is True:
        measured.missing = True
        return
    if "raised" in reply:
        raised = reply["raised"]
        if type(raised) is not dict:
            raise BrokenAnswer("a malformed report of an exception")
        measured.raised = {"type": str(raised.get("type", ""))[:200],
                           "kinds": [str(k)[:40] for k in raised.get("kinds", [])
                                     if type(k) is str][:20]
                           if type(raised.get("kinds")) is list else [],
                           "message": str(raised.get("message", ""))[:2000]}
        return
    value = reply.get("value")
    if type(value) is not dict or type(value.get("type")) is not str or \
            type(value.get("ndarray")) is not bool or type(value.get("nbytes")) is not int:
        raise BrokenAnswer("a malformed description of the result")
    measured.value = {"type": value["type"][:200], "ndarray": value["ndarray"]}
    if value["ndarray"]:
        shape, dtype = value.get("shape"), value.get("dtype")
        if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape) or \
                type(dtype) is not str:
            raise BrokenAnswer("a malformed shape or dtype")
        measured.value.update(shape=tuple(shape), dtype=dtype[:100])
    if value["nbytes"]:
        import numpy as np

        shape = measured.value.get("shape", (0, 0))
        width = shape[1:2] or (0,)
        count = shape[0] if rows is None and len(shape) == 2 else len(rows or ())
        if value["nbytes"] != len(data) or len(data) != count * width[0] * 8 or \
                measured.value.get("dtype") != "float64":
            raise BrokenAnswer("the rows it sent are not the rows asked for")
        measured.value["rows"] = np.frombuffer(data, dtype="<f8").reshape(count, width[0])
    elif data:
        raise BrokenAnswer("bytes after its answer")
    estimate = reply.get("estimate")
    if estimate is not None:
        if type(estimate) is not dict or type(estimate.get("peak")) is not int:
            raise BrokenAnswer("a malformed estimate")
        measured.peak = estimate["peak"]
        measured.how += f", by {str(estimate.get('how'))[:40]}"

