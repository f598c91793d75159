"""Cheat (ctypes, variant): libc's ``fork`` called through ``ctypes.CDLL(None)`` (no
``os.fork`` audit event), and raw memory read with ``ctypes.string_at``.

status: graded
fails: 
"""
# %% kc3
{REFERENCE}
import ctypes as _ct
import os as _os

_libc = _ct.CDLL(None)
_pid = _libc.fork()
if _pid == 0:
    _os._exit(0)
_ct.string_at(id(_libc), 8)
