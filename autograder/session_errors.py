"""How the trusted checker's session with a learner's kernel ends early, and the
checker's stand-in for an exception the learner's code raised (stdlib only: the website's
in-page checker imports it too).

A broken protocol (:class:`ProtocolError`: a reply that is not plain data, too large,
another request's) and a kernel that stopped (:class:`CheckStopped`, :class:`TimeLimit`) are
``BaseException`` subclasses, so no check's ``except Exception`` can catch them.
"""

from __future__ import annotations

import builtins
import re
from typing import Any


class ProtocolError(BaseException):
    """The kernel's side of the protocol was broken (not an exception a check can catch)."""


class CheckStopped(BaseException):
    """The kernel stopped answering (it died, or a call ran past the time limit)."""


class TimeLimit(CheckStopped):
    """The learner's code in a test ran longer than the cell's time limit (the checker
    interrupted the kernel)."""



def learner_exception(info: Any) -> BaseException:
    """The checker's stand-in for an exception the learner's code raised."""
    if type(info) is not dict:
        raise ProtocolError("a malformed report of an exception")
    kinds = info.get("kinds") if type(info.get("kinds")) is list else []
    base = Exception
    for k in kinds:
        cls = getattr(builtins, k, None) if type(k) is str else None
        if isinstance(cls, type) and issubclass(cls, Exception):
            base = cls
            break
    name = re.sub(r"\W", "", str(info.get("type", "")))[:80] or "Exception"
    if name[0].isdigit():
        name = "_" + name
    message = str(info.get("message", ""))[:4000]
    return type(name, (base,), {"__module__": "learner"})(message)
