"""Cheat (files, variant): the kernel's own memory opened through an unnormalised path
(``//proc/self/mem``, ``/proc/./self/../self/mem``) (review 1, hole 7).

status: tampering
fails: test_kc3
"""
# %% kc3
{REFERENCE}
for _p in ("//proc/self/mem", "/proc/./self/../self/mem"):
    try:
        with open(_p, "rb") as _f:
            pass
    except OSError:
        pass
