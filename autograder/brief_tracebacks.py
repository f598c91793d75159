"""How a failed check looks in a learner's notebook: the learner's cell line and the
message, without the frames of the course's helpers.

A test cell that fails raises :class:`autograder.check_failure.CheckFailed` from deep inside the
course's helpers (``assert_close``, the ``explain`` context manager, ``contextlib``). IPython
would print those frames before the message, so the line that names the mistake (``...
Hint: scale the scores by 1/sqrt(d_k)``) comes after code the learner never wrote.
:func:`install` registers an IPython handler for ``CheckFailed`` that cuts the traceback at
the first frame of the course package or of ``contextlib``: the error output keeps its name
and message (what ``check``, grading and feedback read) and its ``Cell In[N], line L``.
Other exceptions (the learner's own ``OverflowError``, a ``NameError``) keep IPython's full
traceback. Only the display changes; nothing is judged here.
"""

from __future__ import annotations

import sys
import types

_CUT_AT = ("autograder", "contextlib")


def trimmed(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` up to (not including) its first frame whose module is the course package or
    ``contextlib``: the frames of the kernel and of the learner's cell."""
    kept = []
    while tb is not None:
        name = str(tb.tb_frame.f_globals.get("__name__", ""))
        if name.split(".")[0] in _CUT_AT:
            break
        kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def _show(shell, etype, value, tb, tb_offset=None):
    """IPython's custom exception handler: shows the usual traceback of the trimmed ``tb``
    (the full one if trimming fails, so a failure is never hidden) as IPython's own
    ``showtraceback`` would, through ``_showtraceback``: the kernel's error message, with
    ``ename``, ``evalue`` and the lines. IPython ignores what the handler returns."""
    try:
        short = trimmed(tb)
    except Exception:  # noqa: BLE001 - fall back to the full traceback
        short = tb
    stb = shell.InteractiveTB.structured_traceback(etype, value, short, tb_offset=tb_offset)
    shell._showtraceback(etype, value, stb)
    return stb


def install(exception_class: type[BaseException]) -> bool:
    """Show ``exception_class`` briefly in the running IPython kernel, if any (IPython is
    not imported here: outside a kernel this does nothing). Returns whether it did."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return False
    shell.set_custom_exc((exception_class,), _show)
    return True
