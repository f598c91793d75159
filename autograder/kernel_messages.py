"""The grader's reading of the Jupyter messages a learner's kernel sends.

The kernel is the learner's: it holds the connection's key, so it can sign any message, and
what it signs need not be JSON the grader can read (a display nested 1,500 lists deep makes
``json.loads`` raise ``RecursionError``; a replayed message fails the signature check's
duplicate test; a header without ``msg_id``). jupyter_client raises such errors from deep
inside nbclient's polling, and grading ended with the grader's own status, ``error``,
retried on every run. :class:`GraderSession` turns every one of them into
:class:`UnreadableMessage`, which :mod:`autograder.nbgrader_execute` answers as a broken
protocol: status ``tampering``, the kernel stopped (contract.md, "Statuses").
"""

from __future__ import annotations

from jupyter_client.session import Session


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
        except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
            said = str(exc).split(": b'")[0].splitlines()[0][:120] if str(exc) else ""  # no digest
            raise UnreadableMessage(f"a message the grader cannot read ({type(exc).__name__}"
                                    + (f": {said})" if said else ")")) from None


def read_safely(km) -> None:
    """Give the kernel manager ``km`` (not started yet) a :class:`GraderSession`, which
    the clients it makes share."""
    km.session = GraderSession(parent=km)
