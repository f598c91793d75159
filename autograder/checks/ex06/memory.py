"""ex06's peak-memory check: one call of the learner's tiled attention at T = 4096 must stay
far below the T x T score matrix, measured from outside by the grader in a fresh sandboxed
probe (:mod:`autograder.peak_probe`), or in this process for a function itself."""

from __future__ import annotations

import secrets
from typing import Callable

import numpy as np

from autograder import diagnose, peak_probe, peak_probe_program
from autograder.checks.ex06._common import ASSIGNMENT, ATOL, _check_output
from autograder.memory import peak_call_memory
from autograder.remote import Remote
from autograder.testing import explain, fail, raised
from autograder.testing import call_learner as _call

MIB = 2**20
# The grader's own products in the probe before the baseline (names np, args, kwargs):
# NumPy's code and BLAS's buffers for the shapes of a tiled call are resident before the
# learner's cells run, as they are in any kernel that has used NumPy.
WARMUP = """
Q, K, V = args
b = int(kwargs.get("block_size", 64))
S = Q @ K[:b].T
S = np.where(np.isfinite(S), S, 0.0) - S.max(axis=1, keepdims=True)
P = np.exp(S)
P.sum(axis=1) + np.maximum(P[:, 0], 0.0)
P @ V[:b]
Q[:b] @ K.T
"""


def peak_memory(tiled: Callable, is_causal: bool, T: int = 4096, d: int = 64,
                block_size: int = 64, limit_mib: float = 16.0, seed: int = 67) -> None:
    """At T = 4096, d = 64, block 64, float64: the call's peak memory < 16 MiB.

    Graded by the checker (``tiled`` a :class:`autograder.remote.Remote`): measured from
    outside by the grader (:func:`autograder.peak_probe.measure_call`): a fresh sandboxed
    Python in its own memory cgroup runs the setup cells, makes the inputs (they do not
    count), then runs the learner's solution cells and the call; the peak is the cgroup's
    high-water mark from the start of the solution cells to the end of the probe, so every
    page made resident counts, by any library or process (a child, a shared or file
    mapping), also a buffer the solution cell made resident before the call. The inputs are
    drawn anew for every grading (a table of answers to known inputs gains nothing).
    Called with a function itself (the course's own tests): measured in this process
    (:func:`autograder.memory.peak_call_memory`), after a first call of all queries against
    one key block (unmeasured) lets lazily initialised libraries settle.

    The T x T score matrix alone would take 128 MiB (a boolean T x T mask 16 MiB). The
    output of the measured call must also be right (the notebook: "The result must equal
    dense attention to 1e-10"), all of it, compared outside the measured process (dense
    attention computed here a block of queries at a time); and in the checker's run it
    must be what the function returns in the learner's kernel for the same inputs (a
    function that behaves otherwise where it is measured, such as on
    ``'ipykernel' in sys.modules``, gets no points here). A call that returns zeros, or
    that gave up the values for the memory, gets no points here.
    """
    what = (f"tiled attention at T = {T}, d = {d}, block_size = {block_size}, "
            f"is_causal = {is_causal}")
    if isinstance(tiled, Remote):
        (Q, K, V), got, peak, how, kernel = _measured_in_probe(tiled, is_causal, T, d,
                                                               block_size, what)
    else:
        (Q, K, V), got, peak, how = _measured_here(tiled, is_causal, T, d, block_size, seed,
                                                   what)
        kernel = None
    error = _largest_error(got, Q, K, V, is_causal)
    if not error <= ATOL:
        # The usual mistakes, told on the first 128 queries (each query's row is its own).
        first = min(T, 128)
        with explain(lambda: diagnose.tiled_attention_hint(
                np.asarray(got, dtype=np.float64)[:first], Q[:first], K, V, block_size,
                is_causal)):
            fail(f"{what}: the output of the measured call differs from dense attention "
                 f"(largest error {error:.3g}, allowed {ATOL:g})")
    if kernel is not None:
        differs = _largest_difference(got, kernel)
        if not differs <= ATOL:
            fail(f"{what}: the measured call, outside your kernel, returned other values "
                 f"than your kernel for the same inputs (largest difference {differs:.3g}, "
                 f"allowed {ATOL:g}): the function must compute the same wherever it runs")
    if peak > limit_mib * MIB:
        fail(f"{what}: peak memory {peak / MIB:.1f} MiB, more than {limit_mib:g} MiB "
             f"(measured {_how_text(how)}); a {T} x {T} float64 array alone takes "
             f"{T * T * 8 / MIB:g} MiB: work on (T_q, block_size) tiles only")


def _measured_in_probe(tiled: Remote, is_causal: bool, T: int, d: int, block_size: int,
                       what: str):
    """:func:`peak_memory`'s measurement of a learner's function: inputs drawn from a new
    seed, the call measured in the peak probe, and the same call in the learner's kernel.
    Returns ``((Q, K, V), probe's output, peak bytes, how, kernel's output)``."""
    seed = secrets.randbits(63)
    got, peak, how = _peak_in_probe(tiled, is_causal, T, d, block_size, seed, what)
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.normal(size=(T, d)) for _ in range(3))
    kernel = _call(tiled, Q.copy(), K.copy(), V.copy(), block_size=block_size,
                   is_causal=is_causal, what=f"{what}, in your kernel")
    _check_output(kernel, (T, d), f"{what}, in your kernel")
    return (Q, K, V), got, peak, how, kernel


def _measured_here(tiled: Callable, is_causal: bool, T: int, d: int, block_size: int,
                   seed: int, what: str):
    """:func:`peak_memory`'s measurement of a function of this process (the course's own
    tests). Returns ``((Q, K, V), output as a plain ndarray, peak bytes, how)``."""
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.normal(size=(T, d)) for _ in range(3))
    # Every query against one key block: the measured call's matrix shapes, so BLAS has
    # started its threads and buffers before the measurement.
    _call(tiled, Q, K[:block_size].copy(), V[:block_size].copy(),
          block_size=block_size, is_causal=is_causal, what=f"{what} (one key block)")
    got, peak, how = _call(peak_call_memory, tiled, Q, K, V, block_size=block_size,
                           is_causal=is_causal, what=what)
    _check_output(got, (T, d), what)
    # a plain array: an ndarray subclass's operators compare nothing
    return (Q, K, V), np.asarray(got).view(np.ndarray), peak, f"in this process, by {how}"


def _largest_difference(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| over two arrays of one shape; inf where either has NaN or infinity."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return float("inf")
    return float(np.abs(a - b).max()) if a.size else 0.0


def _largest_error(got: np.ndarray, Q, K, V, is_causal: bool, rows: int = 256) -> float:
    """max |got - dense attention(Q, K, V)| over the whole output, dense attention computed
    ``rows`` queries at a time (a rows x T_k block of scores, never T_q x T_k); inf where
    ``got`` has NaN or infinity or another shape."""
    got = np.asarray(got, dtype=np.float64)
    T_q, T_k = Q.shape[0], K.shape[0]
    if got.shape != (T_q, V.shape[1]) or not np.isfinite(got).all():
        return float("inf")
    worst = 0.0
    for lo in range(0, T_q, rows):
        hi = min(lo + rows, T_q)
        S = Q[lo:hi] @ K.T / np.sqrt(Q.shape[1])
        if is_causal:
            S[np.arange(T_k)[None, :] > np.arange(lo, hi)[:, None]] = -np.inf
        W = np.exp(S - S.max(axis=1, keepdims=True))
        expected = (W / W.sum(axis=1, keepdims=True)) @ V
        worst = max(worst, float(np.abs(got[lo:hi] - expected).max()))
    return worst


def _how_text(how: str) -> str:
    if how.startswith("cgroup"):
        return (f"by the grader, {how}: everything your solution cells and the call made "
                "resident, in any process or mapping")
    return f"as {how}" if how.startswith("an ") else how


def _peak_in_probe(tiled: Remote, is_causal: bool, T: int, d: int, block_size: int,
                   seed: int, what: str) -> tuple[np.ndarray, int, str]:
    """(the whole output, the peak in bytes, how it was measured) of the learner's function
    run in the grader's probe (:mod:`autograder.peak_probe`)."""
    session = tiled._session
    name = tiled.bound_as or tiled.__name__
    fresh = ("this test runs your function in a fresh Python that has run the notebook's "
             "setup cells and your solution cells only: define what it uses in its own cell")
    measured = peak_probe.measure_call(
        peak_probe_program.setup_cells(ASSIGNMENT),
        peak_probe_program.solution_cells(session.notebook), name, [(T, d)] * 3,
        {"block_size": block_size, "is_causal": is_causal}, seed=seed, warmup=WARMUP,
        timeout=float(session.timeout or 60))
    if measured.error:
        fail(f"{what}: {measured.error}")
    if measured.missing:
        fail(f"{what}: your solution cells define no {name} ({fresh})")
    if measured.raised is not None:
        info = measured.raised
        if "NotImplementedError" in info["kinds"]:
            fail(f"{what}: not implemented yet (the stub raises NotImplementedError)")
        note = f" ({fresh})" if "NameError" in info["kinds"] else ""
        fail(f"{what}: raised {raised(name=info['type'], message=info['message'], kinds=info['kinds'])}{note}")
    value = measured.value
    if not value.get("ndarray"):
        fail(f"{what}: should return a numpy.ndarray, got {value.get('type')}")
    if value.get("shape") != (T, d):
        fail(f"{what}: output shape should be {(T, d)}, got {value.get('shape')}")
    if value.get("dtype") != "float64":
        fail(f"{what}: float64 inputs should give a float64 output, got {value.get('dtype')}")
    if measured.peak is None or "rows" not in value:
        fail(f"{what}: the probe measured nothing ({measured.how})")
    return value["rows"], measured.peak, measured.how
