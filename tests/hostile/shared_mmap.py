# Shared anonymous memory (MAP_SHARED | MAP_ANONYMOUS): RLIMIT_DATA does not count it.
import mmap

maps = []
for i in range(12):
    m = mmap.mmap(-1, 64 << 20)
    m[:] = b"\1" * len(m)  # every page touched
    maps.append(m)
print("mapped", len(maps) * 64, "MiB")
