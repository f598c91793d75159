"""autograder.memory: the peak memory of a call, whatever library allocates it (issue 13)."""

from __future__ import annotations

import ctypes
import importlib.util
import sys

import numpy as np
import pytest

from autograder import memory
from autograder.checks import ex06
from autograder.memory import peak_call_memory
from autograder.reference.tiled_attention import tiled_attention
from autograder.testing import CheckFailed
from submissions import parse_variant, variants

MIB = 2**20
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def _touch_numpy(n_mib):
    a = np.ones(n_mib * MIB // 8)
    return float(a[::512].sum())


def _touch_torch(n_mib):
    import torch

    a = torch.ones(n_mib * MIB // 8, dtype=torch.float64)
    return float(a[::512].sum())


def _touch_c(n_mib):
    """malloc + memset through ctypes: no Python allocator involved."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    p = libc.malloc(n_mib * MIB)
    ctypes.memset(p, 1, n_mib * MIB)
    libc.free(p)


_KEPT: list = []


def _touch_shared_mapping(n_mib):
    """A shared anonymous mapping (RssShmem), still mapped after the call."""
    import mmap

    buf = mmap.mmap(-1, n_mib * MIB)
    a = np.frombuffer(buf, dtype=np.uint8)
    a[::4096] = 1
    _KEPT.append(buf)
    return int(a[::4096].sum())


def _touch_file_mapping(n_mib, tmp=None):
    """A file mapped with np.memmap (RssFile), still mapped after the call."""
    import tempfile

    f = tempfile.NamedTemporaryFile(dir=tmp)
    a = np.memmap(f.name, dtype=np.uint8, mode="w+", shape=(n_mib * MIB,))
    a[::4096] = 1
    _KEPT.append((f, a))
    return int(a[::4096].sum())


def _touch_in_a_child(n_mib):
    """The allocation made by a forked child process (multiprocessing)."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    p = ctx.Process(target=_touch_numpy_slowly, args=(n_mib,))
    p.start()
    p.join()
    return p.exitcode


def _touch_numpy_slowly(n_mib):
    import time

    a = np.ones(n_mib * MIB // 8)
    time.sleep(0.2)  # resident long enough for the 1 ms sampler
    return float(a[::512].sum())


@pytest.mark.parametrize("fn", [_touch_numpy, _touch_c, _touch_shared_mapping,
                                _touch_file_mapping, _touch_in_a_child] + (
    [_touch_torch] if importlib.util.find_spec("torch") else []))
def test_allocations_of_any_library_count(fn):
    fn(1)  # imports and lazy initialisation happen before the measured call
    _result, peak, method = peak_call_memory(fn, 64)
    assert method == "process"
    if fn is _touch_in_a_child:  # the child's resident set also holds pages it shares
        assert peak >= 60 * MIB
    else:
        assert 60 * MIB <= peak < 80 * MIB  # RSS counters are per-thread caches: +-1 MiB


def test_sampled_fallback_sees_a_large_allocation(monkeypatch):
    monkeypatch.setattr(memory, "_reset_high_water_mark", lambda: False)

    def slow_touch():
        a = np.ones(64 * MIB // 8)
        for i in range(0, a.size, 4096):  # takes far longer than one 1 ms sample
            a[i] = 2.0
        return a.size

    _result, peak, method = peak_call_memory(slow_touch)
    assert method == "sampled"
    assert peak >= 60 * MIB


def test_inputs_existing_before_the_call_do_not_count():
    a = np.ones(32 * MIB // 8)
    _result, peak, _ = peak_call_memory(np.sum, a)
    assert peak < 4 * MIB


@pytest.mark.parametrize("is_causal", [False, True])
def test_reference_keeps_the_memory_rule(is_causal):
    ex06.peak_memory(tiled_attention, is_causal)  # < 16 MiB at T = 4096 (contract.md)


@pytest.mark.parametrize("is_causal", [False, True])
def test_torch_dense_fails_the_memory_check(is_causal):
    pytest.importorskip("torch")
    cells, fails = parse_variant(variants("ex06_tiled_attention")["torch_dense_in_blocks"])
    assert fails == {"test_peak_memory", "test_peak_memory_causal"}
    scope: dict = {}
    exec(cells["tiled_attention"], scope)
    with pytest.raises(CheckFailed, match=r"peak memory (1[2-9]\d|[2-9]\d\d)\.\d MiB"):
        ex06.peak_memory(scope["tiled_attention"], is_causal)
