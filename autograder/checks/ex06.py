"""Checks for ``ex06_tiled_attention`` (attention over key blocks with the online softmax).

The oracle is dense attention,
:func:`autograder.reference.numpy_attention.scaled_dot_product_attention`, which holds the
whole T_q x T_k matrix; the learner's ``tiled_attention(Q, K, V, block_size, is_causal)``
must agree with it to 1e-10 in float64 and never hold such a matrix itself.

Each check exercises one behaviour on inputs chosen so that the others are not involved:
unless a check is about them, key counts are multiples of the block size (no partial last
block) and inputs are not causal.

Graded by the trusted checker (``tiled`` an :class:`autograder.remote.Remote`), the
behaviour checks call the learner's function in the kernel on plain data, and the peak
memory is measured by the grader from outside, in a fresh sandboxed probe in its own
memory cgroup (:mod:`autograder.peak_probe`). Called with a function itself (the course's
own tests), the peak is measured in this process (:func:`autograder.memory.peak_call_memory`).
"""

from __future__ import annotations

import secrets
from typing import Callable

import numpy as np

from autograder import diagnose
from autograder import peak_probe, peak_probe_program
from autograder.remote import Remote
from autograder.checks import knowledge as _knowledge  # bound now: private in the kernel
from autograder.memory import peak_call_memory
from autograder.reference import numpy_attention
from autograder.testing import call_learner as _call
from autograder.testing import assert_close, expect_value_error, explain, fail, raised

ASSIGNMENT = "ex06_tiled_attention"
# float64 tiled and dense attention differ only by the order of a few sums.
RTOL, ATOL = 1e-10, 1e-10
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



def dense_attention(Q, K, V, is_causal: bool = False) -> np.ndarray:
    """The oracle: dense attention with a top-left causal mask (query i sees keys j <= i)."""
    T_q, T_k = Q.shape[0], K.shape[0]
    if T_k == 0:
        return np.zeros((T_q, V.shape[1]))
    mask = np.tri(T_q, T_k, dtype=bool) if is_causal else None
    out, _weights = numpy_attention.scaled_dot_product_attention(Q, K, V, mask=mask)
    return out


def _check_output(got, shape: tuple[int, int], what: str) -> None:
    if not isinstance(got, np.ndarray):
        fail(f"{what}: should return a numpy.ndarray, got {type(got).__name__}")
    if got.shape != shape:
        fail(f"{what}: output shape should be {shape}, got {got.shape}")
    if got.dtype != np.float64:
        fail(f"{what}: float64 inputs should give a float64 output, got {got.dtype}")


def _compare(tiled: Callable, Q, K, V, block_size: int, is_causal: bool, what: str) -> None:
    what = (f"{what} (T_q = {Q.shape[0]}, T_k = {K.shape[0]}, d_k = {Q.shape[1]}, "
            f"d_v = {V.shape[1]}, block_size = {block_size}, is_causal = {is_causal})")
    args = (Q.copy(), K.copy(), V.copy())
    got = _call(tiled, *args, block_size=block_size, is_causal=is_causal, what=what)
    _check_output(got, (Q.shape[0], V.shape[1]), what)
    with explain(lambda: diagnose.tiled_attention_hint(got, Q, K, V, block_size, is_causal)):
        assert_close(got, dense_attention(Q, K, V, is_causal), what, rtol=RTOL, atol=ATOL)


def _qkv(rng: np.random.Generator, T_q: int, T_k: int, d_k: int, d_v: int, spread: float = 3.0):
    """Random inputs whose scores spread over several units, so block maxima differ."""
    Q = rng.normal(size=(T_q, d_k)) * spread
    K = rng.normal(size=(T_k, d_k))
    V = rng.normal(size=(T_k, d_v))
    return Q, K, V


def _rising_keys(rng: np.random.Generator, T: int, d_k: int, d_v: int):
    """Inputs whose scores grow along the keys, so the running maximum changes in every block."""
    Q = np.abs(rng.normal(size=(T, d_k))) + 0.5
    K = np.linspace(0.0, 4.0, T)[:, None] * np.ones((T, d_k)) + 0.1 * rng.normal(size=(T, d_k))
    V = rng.normal(size=(T, d_v))
    return Q, K, V


def matches_dense(tiled: Callable, seed: int = 61) -> None:
    """Square, not causal, T a multiple of block_size: equals dense attention."""
    rng = np.random.default_rng(seed)
    for T, d_k, d_v, block_size in [(12, 4, 3, 1), (12, 4, 3, 3), (12, 5, 2, 4), (64, 8, 8, 16),
                                    (96, 16, 5, 32), (40, 3, 7, 40), (32, 64, 64, 8)]:
        _compare(tiled, *_qkv(rng, T, T, d_k, d_v), block_size, False,
                 "tiled attention of random inputs")
    _compare(tiled, *_rising_keys(rng, 48, 6, 4), 8, False,
             "tiled attention whose scores rise from block to block")


def any_block_size(tiled: Callable, seed: int = 62) -> None:
    """Not causal, T not a multiple of block_size (a partial last block), block sizes 1 to T+."""
    rng = np.random.default_rng(seed)
    Q, K, V = _qkv(rng, 23, 23, 4, 3)
    for block_size in list(range(1, 24)) + [24, 64, 1000]:
        _compare(tiled, Q, K, V, block_size, False, "tiled attention with any block size")
    for T, block_size in [(100, 64), (13, 4), (7, 5), (65, 8)]:
        _compare(tiled, *_qkv(rng, T, T, 8, 5), block_size, False,
                 "tiled attention with a partial last block")
    _compare(tiled, *_rising_keys(rng, 50, 6, 4), 8, False,
             "tiled attention with a partial last block and rising scores")


def rectangular(tiled: Callable, seed: int = 63) -> None:
    """Not causal, T_q != T_k: equals dense attention."""
    rng = np.random.default_rng(seed)
    for T_q, T_k, d_k, d_v, block_size in [(1, 8, 4, 2, 2), (9, 4, 3, 3, 2), (5, 24, 6, 1, 8),
                                           (30, 6, 2, 4, 3), (17, 32, 8, 8, 16)]:
        _compare(tiled, *_qkv(rng, T_q, T_k, d_k, d_v), block_size, False,
                 "tiled attention with T_q != T_k")


def causal(tiled: Callable, seed: int = 64) -> None:
    """Square and causal (query i sees keys j <= i): equals dense masked attention."""
    rng = np.random.default_rng(seed)
    for T, d_k, d_v, block_size in [(12, 4, 3, 1), (12, 4, 3, 4), (64, 8, 8, 16), (32, 5, 6, 32),
                                    (48, 16, 4, 8)]:
        _compare(tiled, *_qkv(rng, T, T, d_k, d_v), block_size, True,
                 "causal tiled attention")
    Q, K, V = _qkv(rng, 10, 10, 3, 2)
    for block_size in range(1, 12):
        _compare(tiled, Q, K, V, block_size, True, "causal tiled attention with any block size")
    _compare(tiled, *_rising_keys(rng, 40, 6, 4), 8, True,
             "causal tiled attention whose scores rise from block to block")


def causal_rectangular(tiled: Callable, seed: int = 65) -> None:
    """Causal with T_q != T_k, top-left aligned (query i sees keys j <= i), as in ex05."""
    rng = np.random.default_rng(seed)
    cases = [
        (5, 12, 4, 3, 4),  # the last key block is masked for every query
        (3, 16, 4, 2, 4),  # keys 3..15 are seen by no query
        (1, 8, 3, 3, 2),  # one query, which sees key 0 only
        (12, 8, 4, 3, 4),  # queries 7..11 see every key
        (16, 4, 2, 5, 2),
        (20, 4, 6, 2, 4),  # one block, T_q > T_k
        (9, 24, 8, 8, 8),
        (30, 20, 5, 4, 1),
    ]
    for T_q, T_k, d_k, d_v, block_size in cases:
        _compare(tiled, *_qkv(rng, T_q, T_k, d_k, d_v), block_size, True,
                 "causal tiled attention with T_q != T_k")


def _offset_inputs(rng: np.random.Generator, T_q: int, T_k: int, d_k: int, offset: float,
                   block_offsets: list[float] | None = None):
    """Scores near ``offset`` (or, per key block of 4, near the given offsets) plus O(1)."""
    Q = rng.normal(size=(T_q, d_k))
    K = rng.normal(size=(T_k, d_k))
    V = rng.normal(size=(T_k, 3))
    Q[:, 0] = np.sqrt(d_k)  # q_0 k_0 / sqrt(d_k) = k_0: the first coordinate sets the offset
    if block_offsets is None:
        K[:, 0] = offset
    else:
        K[:, 0] = np.repeat(block_offsets, 4)[:T_k]
    return Q, K, V


def stable_large_scores(tiled: Callable, seed: int = 66) -> None:
    """Scores near -2e4, near +2e4, or blocks whose scores differ by thousands stay exact."""
    rng = np.random.default_rng(seed)
    for offset in (-2e4, 2e4, -800.0, 1000.0):
        for block_size in (1, 4, 8):
            _compare(tiled, *_offset_inputs(rng, 6, 16, 8, offset), block_size, False,
                     f"tiled attention with every score near {offset:g}")
        # Causal, square and in one block, so that only the masking value matters (not the
        # alignment or the block offsets, which the causal tests grade): a finite fill such
        # as -1e4 outweighs real scores near -2e4.
        _compare(tiled, *_offset_inputs(rng, 8, 8, 8, offset), 8, True,
                 f"causal tiled attention with every score near {offset:g}")
    # Later key blocks score thousands below the first one (their weights underflow to 0),
    # or thousands above it (the first block's weights underflow): exact all the same.
    for offsets in ([0.0, -1000.0, -2e4, -3000.0], [-2e4, -1000.0, 0.0, 5.0],
                    [5.0, -1500.0, 3.0, -2e4]):
        _compare(tiled, *_offset_inputs(rng, 6, 16, 8, 0.0, offsets), 4, False,
                 "tiled attention whose key blocks score thousands apart")


def no_keys_zero_output(tiled: Callable) -> None:
    """T_k = 0: every query has no key to attend to and gets a zero row, never NaN."""
    for T_q, d_k, d_v, is_causal in [(3, 4, 2, False), (1, 2, 5, True), (4, 3, 3, True)]:
        what = f"tiled attention with no keys (T_q = {T_q}, T_k = 0, is_causal = {is_causal})"
        Q = np.ones((T_q, d_k))
        got = _call(tiled, Q, np.zeros((0, d_k)), np.zeros((0, d_v)), block_size=2,
                    is_causal=is_causal, what=what)
        _check_output(got, (T_q, d_v), what)
        with explain(lambda: diagnose.tiled_attention_hint(got, Q, np.zeros((0, d_k)),
                                                           np.zeros((0, d_v)), 2, is_causal)):
            assert_close(got, np.zeros((T_q, d_v)), what, atol=0.0)


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
    kernel = None
    if isinstance(tiled, Remote):
        seed = secrets.randbits(63)
        got, peak, how = _peak_in_probe(tiled, is_causal, T, d, block_size, seed, what)
        rng = np.random.default_rng(seed)
        Q, K, V = (rng.normal(size=(T, d)) for _ in range(3))
        kernel = _call(tiled, Q.copy(), K.copy(), V.copy(), block_size=block_size,
                       is_causal=is_causal, what=f"{what}, in your kernel")
        _check_output(kernel, (T, d), f"{what}, in your kernel")
    else:
        rng = np.random.default_rng(seed)
        Q, K, V = (rng.normal(size=(T, d)) for _ in range(3))
        # Every query against one key block: the measured call's matrix shapes, so BLAS has
        # started its threads and buffers before the measurement.
        _call(tiled, Q, K[:block_size].copy(), V[:block_size].copy(),
              block_size=block_size, is_causal=is_causal, what=f"{what} (one key block)")
        got, peak, how = _call(peak_call_memory, tiled, Q, K, V, block_size=block_size,
                               is_causal=is_causal, what=what)
        _check_output(got, (T, d), what)
        how = f"in this process, by {how}"
        # a plain array: an ndarray subclass's operators compare nothing
        got = np.asarray(got).view(np.ndarray)
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


def rejects_bad_input(tiled: Callable) -> None:
    """Mismatched shapes, 1-D inputs and block sizes < 1 raise ValueError."""
    Q, K, V = np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 2))
    # First make sure the function runs at all, so that the stub fails here too.
    _call(tiled, Q, K, V, block_size=2, is_causal=False, what="tiled attention of valid inputs")
    cases = {
        "Q and K with different d_k": (np.ones((3, 3)), K, V, 2),
        "K and V with different T_k": (Q, K, np.ones((6, 2)), 2),
        "a 1-D Q": (np.ones(4), K, V, 2),
        "a 1-D V": (Q, K, np.ones(5), 2),
        "block_size = 0": (Q, K, V, 0),
        "block_size = -2": (Q, K, V, -2),
    }
    for what, args in cases.items():
        expect_value_error(tiled, args, f"tiled attention with {what}")


knowledge_check = _knowledge.check_for("ex06_tiled_attention", __name__)
