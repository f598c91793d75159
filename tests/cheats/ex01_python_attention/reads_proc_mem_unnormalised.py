"""Cheat (files, variant): the kernel's own memory opened through an unnormalised path
(``//proc/self/mem``, ``/proc/./self/../self/mem``) (review 1, hole 7).

status: graded
fails: 
"""
# %% kc3
{REFERENCE}
for _p in ("//proc/self/mem", "/proc/./self/../self/mem"):
    try:
        with open(_p, "rb") as _f:
            pass
    except OSError:
        pass
