"""Cheat (the guard's requests): a thread of the learner's reads the grader's requests for a
look at the shell's state from the kernel's named pipe (through the descriptor the guard
inherited: no open, no audit event) and answers them itself on the guard's channel, while
the shell's run_cell is shadowed so that later cells run as empty cells. Its answers cannot
carry the HMAC of the guard's key: the grader reports a false answer, or the guard reports
the shadowed run_cell when it reads the request first. Dummy answers before it.

status: tampering
fails: test_kc3
"""
# %% kc3
kc3_answer = 0.1
import os
import stat
import threading
import time

_pipes = []
for _fd in range(3, 256):
    try:
        if stat.S_ISFIFO(os.fstat(_fd).st_mode):
            _pipes.append(_fd)
    except OSError:
        pass


def _answer():
    while True:
        for _fd in _pipes:
            try:
                os.set_blocking(_fd, False)
                _data = os.read(_fd, 4096)
            except OSError:
                continue
            for _nonce in _data.split(b"\n"):
                for _out in _pipes if _nonce else ():
                    try:
                        os.write(_out, b"\nchecked\t" + _nonce + b"\t" + b"0" * 64 + b"\n")
                    except OSError:
                        pass
        time.sleep(0.0005)


threading.Thread(target=_answer, daemon=True).start()
_ip = get_ipython()
_orig_run_cell = _ip.run_cell


def _skip(raw_cell, *a, **k):
    return _orig_run_cell("", *a, **k)


setattr(_ip, "run_cell", _skip)
