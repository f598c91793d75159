"""Measuring time, memory and arithmetic rate, for chapter 6 and ``benchmarks/``.

Small helpers so that the chapter's speed ladder and ``make bench`` measure the same way:

- :func:`best_time`: the best of several timed calls (the least disturbed by other work);
- :func:`peak_traced_memory`: the peak of the memory that Python and NumPy allocate during
  one call, measured with :mod:`tracemalloc` (torch's allocations are not traced);
- :func:`attention_flops`: the floating-point operations of the two products of attention;
- :func:`matmul_gflops`: the machine's measured matrix-multiplication rate, the yardstick
  against which an attention implementation's achieved rate is read.
"""

from __future__ import annotations

import time
import tracemalloc
from typing import Any, Callable

import numpy as np


def _sync(device: Any) -> None:
    """Wait for queued GPU work on ``device`` (a no-op on the CPU)."""
    if device is not None and str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


def best_time(fn: Callable, *args, repeat: int = 3, number: int | None = None,
              min_time: float = 0.02, warmup: int = 1, device: Any = None, **kwargs) -> float:
    """Seconds per call of ``fn(*args, **kwargs)``: the best of ``repeat`` timings.

    Each timing runs ``number`` calls and divides by ``number``. With ``number=None``
    (the default) the number of calls is doubled, as :meth:`timeit.Timer.autorange` does,
    until one timing lasts at least ``min_time`` seconds, so that fast calls are not
    drowned by the clock's resolution or by a single interruption. ``warmup`` untimed
    calls come first (caches, lazy initialisation, CUDA kernels being loaded). With a CUDA
    ``device`` the clock stops only after the GPU has finished (``torch.cuda.synchronize``).
    The best timing is the one least disturbed by other work on the machine.

    Raises:
        ValueError: if ``repeat`` or ``number`` is below 1 or ``warmup`` is negative.
    """
    if repeat < 1 or (number is not None and number < 1) or warmup < 0:
        raise ValueError(f"need repeat >= 1, number >= 1, warmup >= 0; got {repeat}, "
                         f"{number}, {warmup}")

    def timed(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            fn(*args, **kwargs)
        _sync(device)
        return (time.perf_counter() - start) / n

    for _ in range(warmup):
        fn(*args, **kwargs)
    _sync(device)
    best = float("inf")
    if number is None:
        number = 1
        while True:
            per_call = timed(number)
            best = min(best, per_call)
            if per_call * number >= min_time or number >= 2**20:
                break
            number *= 2
    for _ in range(repeat):
        best = min(best, timed(number))
    return best


def peak_traced_memory(fn: Callable, *args, **kwargs) -> tuple[Any, int]:
    """``(fn(*args, **kwargs), peak bytes allocated during the call)`` via tracemalloc.

    Counts the allocations of Python objects and NumPy arrays made during the call; memory
    that existed before the call (the inputs) is not counted. Raises RuntimeError if
    tracemalloc is already tracing (nested measurements would disturb each other).
    """
    if tracemalloc.is_tracing():
        raise RuntimeError("tracemalloc is already tracing; measure one call at a time")
    tracemalloc.start()
    try:
        result = fn(*args, **kwargs)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def attention_flops(B: int, num_heads: int, T_q: int, T_k: int, d_k: int,
                    d_v: int | None = None) -> int:
    """Floating-point operations of the two products of attention, QK^T and (weights)V.

    Each product of an (m, k) and a (k, n) matrix takes m n k multiplications and as many
    additions, 2 m n k operations: 2 T_q T_k d_k for the scores and 2 T_q T_k d_v for the
    output, per head and batch element. With d_v = d_k (the default) this is
    4 B num_heads T_q T_k d_k. The softmax's O(T_q T_k) operations are not counted.
    """
    d_v = d_k if d_v is None else d_v
    return 2 * B * num_heads * T_q * T_k * (d_k + d_v)


def matmul_gflops(n: int = 512, backend: str = "numpy", device: str = "cpu",
                  dtype: str = "float32", repeat: int = 3) -> float:
    """The machine's measured rate, in GFLOP/s, for one (n, n) @ (n, n) product.

    Args:
        n: matrix size; the product takes 2 n^3 floating-point operations.
        backend: ``"numpy"`` or ``"torch"``.
        device: for torch, ``"cpu"`` or ``"cuda"``.
        dtype: ``"float32"`` or ``"float64"``.
        repeat: timings to take the best of.

    Raises:
        ValueError: for an unknown backend, a device numpy cannot use, or n < 1.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if backend == "numpy":
        if device != "cpu":
            raise ValueError(f"numpy runs on the CPU only, got device={device!r}")
        rng = np.random.default_rng(0)
        A = rng.standard_normal((n, n)).astype(dtype)
        Bm = rng.standard_normal((n, n)).astype(dtype)
        seconds = best_time(np.matmul, A, Bm, repeat=repeat)
    elif backend == "torch":
        import torch

        gen = torch.Generator().manual_seed(0)
        A = torch.randn(n, n, generator=gen, dtype=getattr(torch, dtype)).to(device)
        Bm = torch.randn(n, n, generator=gen, dtype=getattr(torch, dtype)).to(device)
        seconds = best_time(torch.matmul, A, Bm, repeat=repeat, device=device)
    else:
        raise ValueError(f"backend must be 'numpy' or 'torch', got {backend!r}")
    return 2 * n**3 / seconds / 1e9
