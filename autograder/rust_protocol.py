"""The lines the grader and the course's ``main`` exchange, one each way per call
(:class:`~autograder.rust_program.RustProgram` <-> :mod:`autograder.rust_main`), and the
failures of a call. Pure: no process here.

- first line in: a random token (the nonce); then ``SEQ NAME ARGS`` with ARGS a list of
  the arguments, written as nested ``[a,b]`` lists of numbers in Python's ``repr(float)``
  (``inf``, ``-inf`` and ``nan`` included; Rust parses them exactly);
- each reply: ``NONCE SEQ ok VALUE`` (Rust's ``{:?}`` of each ``f64``, which Python's
  ``float`` reads back exactly), ``NONCE SEQ err MESSAGE``, ``NONCE SEQ panic
  MESSAGE<TAB>FILE:LINE:COL`` (``catch_unwind``: a panic ends the call, not the process)
  or ``NONCE SEQ refused WHY``; messages escape ``\\``, newline, CR and tab. Lines that do
  not begin with the nonce are the learner's own output and are skipped (at most
  :data:`MAX_LINE` bytes a line and :data:`MAX_NOISE` bytes a call).
"""

from __future__ import annotations

import re
from typing import Any

from autograder.rust_source import RustNotImplemented, RustPanic

MAX_LINE = 4 * 2**20  # a reply line (and any line the program prints) at most this long
MAX_NOISE = 4 * 2**20  # bytes of the learner's own output skipped during one call



class RustNotDefined(RuntimeError):
    """The learner's ``%%rust`` cells define no function of that name."""


class RustCallFailed(RuntimeError):
    """A call did not come back with a value, an ``Err`` or a panic (base class)."""


class RustTimeout(RustCallFailed):
    """The call ran longer than its time limit; the process was killed."""


class RustCrashed(RustCallFailed):
    """The program ended during the call (an abort, a signal, a limit, ``exit``)."""


class RustRefused(RustCallFailed):
    """The program's reply broke the protocol or a limit (a line too long, too much
    output); the process was killed."""


_NUMBER = re.compile(rb"-?(?:inf|NaN|[0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?)")


def parse_value(text: bytes) -> list:
    """Nested lists of numbers as the course's ``main`` writes them (``[1.0,NaN]``,
    ``[[1.0],[2.5e-7]]``); raises ValueError when ``text`` is anything else."""
    stack: list[list] = []
    out: list | None = None
    i, n = 0, len(text)
    while i < n:
        c = text[i:i + 1]
        if c == b"[":
            if len(stack) >= 3:
                raise ValueError("nested too deeply")
            stack.append([])
            i += 1
        elif c == b"]":
            if not stack:
                raise ValueError("an unmatched ]")
            done = stack.pop()
            if stack:
                stack[-1].append(done)
            else:
                out = done
                if i + 1 != n:
                    raise ValueError("text after the value")
            i += 1
            if i < n and text[i:i + 1] == b"," and stack:
                i += 1
        else:
            m = _NUMBER.match(text, i)
            if not m or not stack:
                raise ValueError(f"not a number at byte {i}")
            stack[-1].append(float(m.group(0)))
            i = m.end()
            if i < n and text[i:i + 1] == b",":
                i += 1
    if out is None or stack:
        raise ValueError("an unfinished list")
    return out


def unescape(text: str) -> str:
    table = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\"}
    return re.sub(r"\\(.)", lambda m: table.get(m.group(1), m.group(1)), text)


def _number(x: Any, what: str) -> str:
    if isinstance(x, (str, bytes, bytearray)):
        raise TypeError(f"{what} must be a number, got {type(x).__name__}")
    try:
        return repr(float(x))
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"{what} must be a number, got {type(x).__name__} ({exc})") from None


def _plain(x: Any) -> Any:
    return x.tolist() if type(x).__module__ == "numpy" and hasattr(x, "tolist") else x


def _encode_vector(x: Any, what: str) -> str:
    x = _plain(x)
    try:
        items = list(x)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of numbers, got "
                        f"{type(x).__name__}") from None
    return "[" + ",".join(_number(v, f"{what}[{i}]") for i, v in enumerate(items)) + "]"


def _encode_matrix(m: Any, what: str) -> str:
    m = _plain(m)
    try:
        rows = list(m)
    except TypeError:
        raise TypeError(f"{what} must be a list of rows, got {type(m).__name__}") from None
    return "[" + ",".join(_encode_vector(r, f"{what}[{i}]") for i, r in enumerate(rows)) + "]"


def encode_arguments(name: str, args: tuple) -> str:
    """The ARGS of a request to ``name`` (``softmax(row)``, or
    ``scaled_dot_product_attention(Q, K, V)``): raises TypeError for the wrong number of
    arguments or for arguments that are not numbers (lists, lists of rows, NumPy arrays)."""
    if name == "softmax":
        if len(args) != 1:
            raise TypeError(f"softmax takes 1 argument (row), got {len(args)}")
        return "[" + _encode_vector(args[0], "row") + "]"
    if len(args) != 3:
        raise TypeError(f"scaled_dot_product_attention takes 3 arguments (Q, K, V), "
                        f"got {len(args)}")
    return "[" + ",".join(_encode_matrix(m, w) for m, w in zip(args, "QKV")) + "]"


def reply_value(name: str, kind: str, rest: bytes) -> list:
    """The value of a reply to ``name`` (``kind`` and the rest of its line), or what it
    raises: ValueError (``err``), :class:`~autograder.rust_source.RustPanic` or
    :class:`~autograder.rust_source.RustNotImplemented` (``panic``), :class:`RustRefused` (a
    ``refused`` reply, or a value that is not the lists of numbers ``name`` returns)."""
    text = rest.decode("utf-8", "replace")
    if kind == "ok":
        try:
            value = parse_value(rest)
        except ValueError as exc:
            raise RustRefused(f"the reply of {name} is not a list of numbers ({exc})") \
                from None
        if name == "softmax" and not all(type(x) is float for x in value):
            raise RustRefused("the reply of softmax is not a list of numbers")
        if name != "softmax" and not all(type(r) is list for r in value):
            raise RustRefused(f"the reply of {name} is not a list of rows")
        return value
    if kind == "err":
        raise ValueError(unescape(text))
    if kind == "panic":
        msg, _, place = text.partition("\t")
        msg, place = unescape(msg), unescape(place)
        where = f" (at {place})" if place else ""
        if msg.startswith(("not yet implemented", "not implemented")):
            raise RustNotImplemented(f"{name} panicked: {msg}{where}")
        raise RustPanic(f"{name} panicked: {msg}{where}")
    raise RustRefused(f"the program refused the call of {name}: {unescape(text)[:500]}")
