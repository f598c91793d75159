"""A compiled Rust function called from Python through :mod:`ctypes` (:class:`RustFunction`):
lists of numbers, lists of rows or NumPy arrays in (arrays without copying), lists of
Python floats out; ``Err`` raised as ValueError, a panic as
:class:`~autograder.rust_source.RustPanic`; the call runs in a helper thread so that an
interrupt stops the wait."""

from __future__ import annotations

import array
import ctypes
import re
import threading
from pathlib import Path
from typing import Any

from autograder.rust_source import SIGNATURES, RustNotImplemented, RustPanic, RustSource

class _RustResult(ctypes.Structure):
    _fields_ = [("status", ctypes.c_uint32), ("data", ctypes.POINTER(ctypes.c_double)),
                ("len", ctypes.c_size_t), ("rows", ctypes.POINTER(ctypes.c_size_t)),
                ("n_rows", ctypes.c_size_t), ("msg", ctypes.POINTER(ctypes.c_char)),
                ("msg_len", ctypes.c_size_t)]


_P_DOUBLE = ctypes.POINTER(ctypes.c_double)
_P_SIZE = ctypes.POINTER(ctypes.c_size_t)
_SIZE_T = next(c for c in "LQI" if array.array(c).itemsize == ctypes.sizeof(ctypes.c_size_t))


def _vector(x: Any, what: str) -> tuple[Any, Any, int]:
    """(keep-alive, pointer, length) of a sequence of numbers for the C side."""
    if type(x).__module__ == "numpy":
        import numpy as np

        a = np.ascontiguousarray(x, dtype=np.float64)
        if a.ndim != 1:
            raise ValueError(f"{what} must be one-dimensional, got shape {a.shape}")
        return a, a.ctypes.data_as(_P_DOUBLE), a.size
    try:
        a = array.array("d", x)
    except TypeError as exc:
        raise TypeError(f"{what} must be a sequence of numbers ({exc})") from None
    return a, ctypes.cast(a.buffer_info()[0], _P_DOUBLE), len(a)


def _matrix(m: Any, what: str) -> tuple[Any, Any, Any, int]:
    """(keep-alive, data pointer, row-lengths pointer, rows) of a list of rows; rows may
    differ in length (the Rust function decides what to do with ragged input)."""
    if type(m).__module__ == "numpy" and getattr(m, "ndim", 0) == 2:
        import numpy as np

        a = np.ascontiguousarray(m, dtype=np.float64)
        lens = array.array(_SIZE_T, [a.shape[1]] * a.shape[0])
        return (a, lens), a.ctypes.data_as(_P_DOUBLE), ctypes.cast(
            lens.buffer_info()[0], _P_SIZE), a.shape[0]
    data, lens = array.array("d"), array.array(_SIZE_T)
    try:
        rows = list(m)
    except TypeError:
        raise TypeError(f"{what} must be a list of rows, got {type(m).__name__}") from None
    for i, r in enumerate(rows):
        try:
            data.extend(r)
        except TypeError as exc:
            raise TypeError(f"{what}[{i}] must be a sequence of numbers ({exc})") from None
        lens.append(len(r))
    return ((data, lens), ctypes.cast(data.buffer_info()[0], _P_DOUBLE),
            ctypes.cast(lens.buffer_info()[0], _P_SIZE), len(rows))


_PANIC_AT = re.compile(r"^(.*?)\x00(.*)$", re.S)


class RustFunction:
    """A compiled Rust function, callable from Python (see the module's docstring).

    Attributes: ``__name__``, ``signature`` (the Rust signature the glue calls),
    ``rust_sources`` (the :class:`RustSource` files of the crate it was compiled from)
    and ``library`` (the shared library's path).
    """

    def __init__(self, name: str, lib: ctypes.CDLL, sources: tuple[RustSource, ...],
                 path: Path):
        self.__name__ = self.__qualname__ = name
        self.signature = SIGNATURES[name]
        self.rust_sources = sources
        self.library = path
        self._lib = lib
        self._fn = getattr(lib, f"course_{name}")
        self._fn.restype = None
        self._free = lib.course_free
        self._free.restype = None
        self.__doc__ = f"Rust `{self.signature}`, compiled with rustc, called through ctypes."

    def __repr__(self) -> str:
        return f"<Rust function {self.signature}>"

    def __call__(self, *args):
        if self.__name__ == "softmax":
            if len(args) != 1:
                raise TypeError(f"softmax takes 1 argument (row), got {len(args)}")
            keep, ptr, n = _vector(args[0], "row")
            c_args = [ptr, ctypes.c_size_t(n)]
        else:
            if len(args) != 3:
                raise TypeError(f"scaled_dot_product_attention takes 3 arguments (Q, K, V), "
                                f"got {len(args)}")
            keep, c_args = [], []
            for name, m in zip("QKV", args):
                alive, data, lens, rows = _matrix(m, name)
                keep.append(alive)
                c_args += [data, lens, ctypes.c_size_t(rows)]
        out = _RustResult()
        c_args.append(ctypes.byref(out))
        _run_interruptibly(self._fn, c_args, keep, out)
        try:
            if out.status == 0:
                flat = out.data[:out.len] if out.len else []
                lens = out.rows[:out.n_rows] if out.n_rows else []
                rows, at = [], 0
                for n in lens:
                    rows.append(flat[at:at + n])
                    at += n
                return rows[0] if self.__name__ == "softmax" else rows
            msg = ctypes.string_at(out.msg, out.msg_len).decode("utf-8", "replace") \
                if out.msg_len else ""
        finally:
            self._free(ctypes.byref(out))
        if out.status == 1:
            raise ValueError(msg)
        m = _PANIC_AT.match(msg)
        text, place = (m.group(1), m.group(2)) if m else (msg, "")
        where = f" (at {place})" if place else ""
        if text.startswith(("not yet implemented", "not implemented")):
            raise RustNotImplemented(f"{self.__name__} panicked: {text}{where}")
        raise RustPanic(f"{self.__name__} panicked: {text}{where}")


def _run_interruptibly(fn, c_args, keep, out) -> None:
    """Call ``fn(*c_args)`` in a helper thread (ctypes releases the GIL) and wait for it,
    so that KeyboardInterrupt reaches the caller even if the Rust code never returns. The
    thread keeps the arguments alive for as long as it runs."""
    def target():
        fn(*c_args)

    t = threading.Thread(target=target, name="rust-call", daemon=True)
    t._course_keep = (keep, out)  # alive while the thread runs, even after an interrupt
    t.start()
    while t.is_alive():
        t.join(0.1)

