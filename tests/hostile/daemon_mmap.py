# A daemon (double fork, its own session) that maps shared memory past the cap: not the
# kernel's descendant once its parent exits (the sandbox's first process adopts it).
import mmap
import os
import time

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        maps = []
        for i in range(12):
            m = mmap.mmap(-1, 64 << 20)
            m[:] = b"\1" * len(m)
            maps.append(m)
        time.sleep(30)
    os._exit(0)
time.sleep(6)  # the daemon maps meanwhile
