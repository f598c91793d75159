"""Cheat (the shell): the shell's run_cell shadowed on the instance in the last learner cell
(setattr on a local name): every later cell runs as an empty cell (no exec at all), so no
test cell raises and no 'exec' event ever lets the guard look again. Dummy answers before
it (review 2).

status: tampering
fails: test_kc3
"""
# %% kc3
kc3_answer = 0.1
_ip = get_ipython()
_orig_run_cell = _ip.run_cell


def _skip(raw_cell, *a, **k):
    return _orig_run_cell("", *a, **k)


async def _skip_async(raw_cell, *a, **k):
    return await _orig_run_cell_async("", *a, **k)


_orig_run_cell_async = _ip.run_cell_async
setattr(_ip, "run_cell", _skip)
setattr(_ip, "run_cell_async", _skip_async)
