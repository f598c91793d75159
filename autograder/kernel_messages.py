"""The grader's reading of the Jupyter messages a learner's kernel sends.

The kernel is the learner's: it holds the connection's key, so it can sign any message, and
what it signs need not be JSON the grader can read (a display nested 1,500 lists deep makes
``json.loads`` raise ``RecursionError``; a replayed message fails the signature check's
duplicate test; a header without ``msg_id``). jupyter_client raises such errors from deep
inside nbclient's polling, and grading ended with the grader's own status, ``error``,
retried on every run. :class:`GraderSession` turns every one of them into
:class:`UnreadableMessage`, which :mod:`autograder.nbgrader_execute` answers as a broken
protocol: status ``tampering``, the kernel stopped (contract.md, "Statuses").

A message the grader can read may still make an output no notebook may hold (a display's
value that is a number, a stream named ``stdin\\0``, an execution count ``"NaN"``, text
with a lone surrogate, which UTF-8 cannot write): nbgrader failed to write the graded
notebook, and the row was ``error`` too. :func:`repair_outputs` replaces each such output
by a note and such a count by none, before nbgrader sees the notebook.
"""

from __future__ import annotations

import json

import nbformat
from jupyter_client.session import Session
from nbformat import validator

DROPPED = ("[output dropped: the kernel sent an output that is not a valid notebook output "
           "(grading limit)]\n")


class UnreadableMessage(Exception):
    """A message from the learner's kernel that the grader cannot read; says why."""


class GraderSession(Session):
    """jupyter_client's Session whose :meth:`deserialize` raises only
    :class:`UnreadableMessage` for a message it cannot read."""

    def deserialize(self, msg_list, content=True, copy=True):
        try:
            return super().deserialize(msg_list, content=content, copy=copy)
        except RecursionError:
            raise UnreadableMessage("a message nested deeper than the grader reads") from None
        except MemoryError:
            raise UnreadableMessage("a message too large for the grader to read") from None
        except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
            said = str(exc).split(": b'")[0].splitlines()[0][:120] if str(exc) else ""  # no digest
            raise UnreadableMessage(f"a message the grader cannot read ({type(exc).__name__}"
                                    + (f": {said})" if said else ")")) from None


def max_message_bytes(cap: int) -> int:
    """The largest frame of a message the grader takes from a kernel, under the memory cap
    ``cap`` (bytes; 0: none) that the grading worker itself runs under: decoding a message
    takes several times its size, so a kernel sending more (a 60 MB header, 25 MB messages
    on a channel nobody reads) is disconnected by ZMQ (``ZMQ_MAXMSGSIZE``) instead of
    filling the worker's memory. -1 (no limit) without a cap."""
    return max(cap // 16, 8 * 2**20) if cap else -1


def read_safely(km) -> None:
    """Give the kernel manager ``km`` (not started yet) a :class:`GraderSession`, which
    the clients it makes share."""
    km.session = GraderSession(parent=km)


def repair_outputs(nb) -> int:
    """Make the outputs and execution counts of ``nb``'s code cells (what the kernel sent)
    valid in a notebook: an invalid output becomes the note :data:`DROPPED`, a lone
    surrogate in a text U+FFFD, an execution count other than a whole number none.
    Returns how many outputs were dropped (0 at once for a valid notebook)."""
    try:
        nbformat.validate(nb)
        json.dumps(nb, ensure_ascii=False).encode("utf-8")
        return 0
    except (nbformat.ValidationError, UnicodeEncodeError, TypeError, ValueError):
        pass
    dropped = 0
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        count = cell.get("execution_count")
        if not (count is None or (type(count) is int and count >= 0)):
            cell["execution_count"] = None
        outputs = []
        for out in cell.get("outputs", []):
            out = _utf8(out)
            if out.get("output_type") == "execute_result" and type(
                    out.get("execution_count")) is not int:
                out["execution_count"] = None
            try:
                validator.validate(out, ref="output", version=4, version_minor=5)
                outputs.append(out)
            except (nbformat.ValidationError, TypeError, ValueError):
                outputs.append(nbformat.v4.new_output("stream", name="stdout", text=DROPPED))
                dropped += 1
        cell["outputs"] = outputs
    return dropped


def _utf8(value):
    """``value`` with every string that UTF-8 cannot write (a lone surrogate) repaired."""
    if isinstance(value, str):
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in value) \
            if any("\ud800" <= c <= "\udfff" for c in value) else value
    if isinstance(value, dict):
        return type(value)({_utf8(k): _utf8(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_utf8(v) for v in value]
    return value
