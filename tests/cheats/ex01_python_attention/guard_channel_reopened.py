"""Cheat (the guard's pipes): the last learner cell finds the kernel's named pipes among its
open file descriptors and opens each again through /proc/self/fd, to read the guard's key
and reports out of its channel to the grader and to take the grader's requests. The open is
refused and reported. Dummy answers before it.

status: graded
fails: test_kc3
"""
# %% kc3
kc3_answer = 0.1
import os
import stat

for _fd in range(3, 256):
    try:
        if not stat.S_ISFIFO(os.fstat(_fd).st_mode):
            continue
        _again = os.open(f"/proc/self/fd/{_fd}", os.O_RDONLY | os.O_NONBLOCK)
        os.read(_again, 65536)
    except OSError:
        pass
