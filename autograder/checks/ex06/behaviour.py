"""ex06's behaviour checks: the learner's tiled attention against dense attention, on
every block size, rectangular and causal inputs, large scores, no keys, bad input."""

from __future__ import annotations

from typing import Callable

import numpy as np

from autograder import diagnose
from autograder.checks.ex06._common import (_check_output, _compare, _offset_inputs, _qkv,
                                            _rising_keys)
from autograder.testing import assert_close, expect_value_error, explain
from autograder.testing import call_learner as _call


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
