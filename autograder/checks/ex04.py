"""Checks for ``ex04_positional_encoding`` (sinusoidal encodings and their shift matrices).

Each check tests one behaviour. The shift-matrix checks compare M_k @ PE[pos] with the
*reference* encoding, so a learner's mistake in ``sinusoidal_positional_encoding`` costs
the encoding's points only, and a mistake in ``relative_shift_matrix`` only the matrix's.

Tolerance: positions go up to 9999, so the angles pos * w_i reach 1e4 rad; computing them
as pos * base**(-2i/d), pos / base**(2i/d) or exp(-2i/d log base) * pos differs by a few
units in the last place of the angle (about 1e-12 rad), and the sines and cosines by as
much. ``ATOL = 1e-9`` leaves a factor of 1000 for that and catches every wrong formula.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from autograder.checks import knowledge as _knowledge  # bound now: private in the kernel
from autograder.diagnose_encoding import positional_encoding_hint, shift_matrix_hint
from autograder.reference import positional_encoding as ref
from autograder.testing import call_learner as _call
from autograder.testing import assert_close, expect_value_error, explain, fail
from autograder.testing import check_array as _array

ATOL = 1e-9
# (T, d_model): tiny, odd multiples of 2, the paper's 512 and long sequences.
PE_SIZES = [(1, 2), (5, 4), (10, 6), (64, 32), (100, 512), (4096, 64), (10_000, 8)]
BASES = [100.0, 2.0, 1e5, 10]
SHIFT_DIMS = [2, 4, 16, 64]
SHIFTS = [0, 1, 2, 5, 17, 100, 1000]
NEGATIVE_SHIFTS = [-1, -2, -17, -300]




def _pe(fn: Callable, T: int, d_model: int, **kwargs) -> np.ndarray:
    extra = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    what = f"sinusoidal_positional_encoding({T}, {d_model}{extra})"
    return _array(_call(fn, T, d_model, what=what, **kwargs), (T, d_model), what)


def _shift(fn: Callable, k: int, d_model: int, **kwargs) -> tuple[np.ndarray, str]:
    extra = "".join(f", {key}={v!r}" for key, v in kwargs.items())
    what = f"relative_shift_matrix({k}, {d_model}{extra})"
    return _array(_call(fn, k, d_model, what=what, **kwargs), (d_model, d_model), what), what


# --- sinusoidal_positional_encoding -------------------------------------------------------


def pe_shape_and_dtype(fn: Callable) -> None:
    """The encoding is a float64 numpy array of shape (T, d_model)."""
    for T, d_model in [(1, 2), (7, 6), (50, 16), (3, 512)]:
        pe = _pe(fn, T, d_model)
        if pe.dtype != np.float64:
            fail(f"sinusoidal_positional_encoding({T}, {d_model}) should be float64, "
                 f"got {pe.dtype}")


def pe_matches_reference(fn: Callable) -> None:
    """The encoding equals the reference for many sizes, positions up to 9999 included."""
    for T, d_model in PE_SIZES:
        got = _pe(fn, T, d_model)
        with explain(lambda: positional_encoding_hint(got, T, d_model)):
            assert_close(got, ref.sinusoidal_positional_encoding(T, d_model),
                         f"sinusoidal_positional_encoding({T}, {d_model})", rtol=0, atol=ATOL)


def pe_interleaved(fn: Callable) -> None:
    """Even channels hold sines and odd channels cosines, interleaved pair by pair."""
    pos = np.arange(30.0)
    for d_model in (2, 4, 10, 128):
        pe = np.asarray(_pe(fn, 30, d_model), dtype=np.float64)
        with explain(lambda: positional_encoding_hint(pe, 30, d_model)):
            _check_interleaved(pe, pos, f"sinusoidal_positional_encoding(30, {d_model})")


def _check_interleaved(pe: np.ndarray, pos: np.ndarray, what: str) -> None:
    if not (np.allclose(pe[0, 0::2], 0.0, atol=ATOL) and np.allclose(pe[0, 1::2], 1.0, atol=ATOL)):
        fail(f"{what}: position 0 should hold sin 0 = 0 on every even channel and "
             "cos 0 = 1 on every odd channel (sin and cos interleaved)")
    radius = pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2
    if not np.allclose(radius, 1.0, atol=1e-9):
        fail(f"{what}: channels (2i, 2i + 1) should be (sin, cos) of the same angle, so "
             "their squares should add up to 1")
    if not (np.allclose(pe[:, 0], np.sin(pos), atol=ATOL)
            and np.allclose(pe[:, 1], np.cos(pos), atol=ATOL)):
        fail(f"{what}: channel 0 should be sin(pos) and channel 1 cos(pos) (w_0 = 1)")


def pe_other_base(fn: Callable) -> None:
    """The ``base`` argument replaces 10000 in w_i = base^(-2i / d_model)."""
    for base in BASES:
        for d_model in (4, 16, 64):
            got = _pe(fn, 50, d_model, base=base)
            with explain(lambda: positional_encoding_hint(got, 50, d_model, base)):
                assert_close(got, ref.sinusoidal_positional_encoding(50, d_model, base=base),
                             f"sinusoidal_positional_encoding(50, {d_model}, base={base!r})",
                             rtol=0, atol=ATOL)


def pe_rejects_odd_d_model(fn: Callable) -> None:
    """An odd d_model raises ValueError (channels come in sin/cos pairs)."""
    for d_model in (1, 3, 7, 513):
        expect_value_error(fn, (10, d_model), f"sinusoidal_positional_encoding(10, {d_model})")


# --- relative_shift_matrix ----------------------------------------------------------------


def _shift_property(M: np.ndarray, k: int, d_model: int, what: str, base=10000.0) -> None:
    """PE[pos + k] == M @ PE[pos] for 512 positions pos (pos + k >= 0 throughout)."""
    start = max(0, -k)
    pe = ref.sinusoidal_positional_encoding(start + 512 + max(k, 0), d_model, base=base)
    before = pe[start:start + 512]              # PE[pos]
    after = pe[start + k:start + k + 512]       # PE[pos + k]
    moved = before @ np.asarray(M, dtype=np.float64).T  # row pos: (M @ PE[pos])^T
    err = np.abs(moved - after).max(axis=1)
    if np.any(err > ATOL) or not np.all(np.isfinite(moved)):
        bad = start + int(np.argmax(np.where(np.isfinite(err), err, np.inf)))
        fail(f"{what}: M @ PE[pos] should equal PE[pos + {k}] for every pos, but differs "
             f"at pos = {bad} by {err.max():.3g}")


def shift_matches_reference(fn: Callable) -> None:
    """M_k equals the reference's block-diagonal rotation for k >= 0 and several d_model."""
    for d_model in SHIFT_DIMS:
        for k in SHIFTS:
            M, what = _shift(fn, k, d_model)
            with explain(lambda: shift_matrix_hint(M, k, d_model)):
                assert_close(M, ref.relative_shift_matrix(k, d_model), what, rtol=0, atol=ATOL)


def shift_moves_every_position(fn: Callable) -> None:
    """PE[pos + k] == M_k @ PE[pos] for every pos < 512 and k >= 0."""
    for d_model in (2, 8, 64, 128):
        for k in (0, 1, 7, 50, 255):
            M, what = _shift(fn, k, d_model)
            with explain(lambda: shift_matrix_hint(M, k, d_model)):
                _shift_property(M, k, d_model, what)


def shift_negative_k(fn: Callable) -> None:
    """Negative k moves back: PE[pos + k] == M_k @ PE[pos], and M_{-k} undoes M_k."""
    for d_model in (2, 8, 64):
        for k in NEGATIVE_SHIFTS:
            M, what = _shift(fn, k, d_model)
            with explain(lambda: shift_matrix_hint(M, k, d_model)):
                assert_close(M, ref.relative_shift_matrix(k, d_model), what, rtol=0, atol=ATOL)
                _shift_property(M, k, d_model, what)
            forward, _ = _shift(fn, -k, d_model)
            assert_close(M @ forward, np.eye(d_model),
                         f"relative_shift_matrix({k}, {d_model}) @ relative_shift_matrix("
                         f"{-k}, {d_model}) (a shift and its inverse)", rtol=0, atol=ATOL)


def shift_other_base(fn: Callable) -> None:
    """The ``base`` argument replaces 10000 in the rotation angles k * w_i."""
    for base in BASES:
        for d_model in (4, 16):
            for k in (1, 3, 10):
                M, what = _shift(fn, k, d_model, base=base)
                with explain(lambda: shift_matrix_hint(M, k, d_model, base)):
                    assert_close(M, ref.relative_shift_matrix(k, d_model, base=base), what,
                                 rtol=0, atol=ATOL)
                    _shift_property(M, k, d_model, what, base=base)


knowledge_check = _knowledge.check_for("ex04_positional_encoding", __name__)
