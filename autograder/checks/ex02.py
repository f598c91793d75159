"""Checks for ``ex02_numpy_attention`` (batched NumPy softmax, causal mask and attention).

Comparison checks convert results to float64 and check dtypes only where dtype is the
behaviour under test (``softmax_keeps_dtype``, ``attention_keeps_dtype``), so an
implementation that upcasts float32 loses exactly those points.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from autograder import diagnose
from autograder.checks import knowledge as _knowledge  # bound now: private in the kernel
from autograder.reference import numpy_attention as ref
from autograder.testing import (assert_close, call_learner, expect_value_error, explain, fail,
                                some_true_per_row)
from autograder.testing import check_array as _array

RTOL, ATOL = 1e-10, 1e-12


def _call(fn: Callable, *args, what: str, **kwargs):
    """The learner's function, with NumPy's floating-point warnings silenced."""
    return call_learner(fn, *args, what=what, within=np.errstate(all="ignore"), **kwargs)


def _pair(result, out_shape: tuple, w_shape: tuple, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Check attention returned (output, weights) arrays of the right shapes."""
    if not isinstance(result, tuple) or len(result) != 2:
        fail(f"{what} should return a tuple (output, weights), got {type(result).__name__}")
    out = _array(result[0], out_shape, f"{what}: output")
    w = _array(result[1], w_shape, f"{what}: weights")
    return out, w


def _attention(attention: Callable, Q, K, V, mask=None, *, what: str):
    """Call the learner's attention, check shapes, return (output, weights, ref_out, ref_w)."""
    args = (Q, K, V) if mask is None else (Q, K, V, mask)
    exp_out, exp_w = ref.scaled_dot_product_attention(*args)
    got = _call(attention, *[np.copy(a) for a in args], what=what)
    out, w = _pair(got, exp_out.shape, exp_w.shape, what)
    return out, w, exp_out, exp_w


def _hint(w, out, Q, K, V, mask) -> str:
    """The common mistake the weights or the output match (see autograder.diagnose)."""
    return diagnose.weights_hint(w) or diagnose.attention_hint(out, Q, K, V, mask)


# --- softmax ------------------------------------------------------------------------------


def softmax_matches_reference(softmax: Callable, seed: int = 1) -> None:
    """softmax over the last axis of random arrays (1-D to 3-D) equals the reference."""
    rng = np.random.default_rng(seed)
    for shape in [(1,), (5,), (3, 4), (2, 3, 6), (4, 1)]:
        x = rng.uniform(-6.0, 6.0, size=shape)
        what = f"softmax of a random array of shape {shape}"
        got = _array(_call(softmax, x.copy(), what=what), shape, what)
        assert_close(got, ref.softmax(x), what, rtol=RTOL, atol=ATOL)


def softmax_along_axis(softmax: Callable, seed: int = 2) -> None:
    """softmax(x, axis=a) normalises along axis a, for every axis of a 3-D array."""
    rng = np.random.default_rng(seed)
    x = rng.normal(scale=3.0, size=(3, 4, 5))
    for axis in (0, 1, 2, -1, -2, -3):
        what = f"softmax(x, axis={axis}) for x of shape {x.shape}"
        got = _array(_call(softmax, x.copy(), axis=axis, what=what), x.shape, what)
        assert_close(got, ref.softmax(x, axis=axis), what, rtol=RTOL, atol=ATOL)


def softmax_is_stable(softmax: Callable) -> None:
    """softmax of very large or very negative scores, per row, has no inf or NaN."""
    cases = {
        "scores [1000, 1001]": np.array([1000.0, 1001.0]),
        "scores near -1000": np.array([-1000.0, -1001.0, -999.0]),
        "one row near +1000 and one near -1000 (the maximum must be taken per row)":
            np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1002.0, -1001.0]]),
        "float32 scores [100, 99] (exp(100) overflows float32)":
            np.array([100.0, 99.0], dtype=np.float32),
    }
    for what, x in cases.items():
        what = f"softmax of {what}"
        got = _array(_call(softmax, x.copy(), what=what), x.shape, what)
        rtol = 1e-5 if x.dtype == np.float32 else 1e-9
        assert_close(got, ref.softmax(x), what, rtol=rtol, atol=1e-12)


def softmax_keeps_dtype(softmax: Callable, seed: int = 3) -> None:
    """softmax returns float32 for float32 input and float64 for float64 input."""
    rng = np.random.default_rng(seed)
    for dtype in (np.float32, np.float64):
        x = rng.normal(size=(3, 4)).astype(dtype)
        what = f"softmax of a {np.dtype(dtype).name} array"
        got = _array(_call(softmax, x.copy(), what=what), x.shape, what)
        if got.dtype != dtype:
            fail(f"{what} should be {np.dtype(dtype).name}, got {got.dtype}")
        assert_close(got, ref.softmax(x), what, rtol=1e-5, atol=1e-7)


# --- causal_mask ---------------------------------------------------------------------------


def causal_mask_matches_reference(causal_mask: Callable) -> None:
    """causal_mask(T) is a (T, T) bool array, True on and below the diagonal, for T = 1..9."""
    for T in range(1, 10):
        what = f"causal_mask({T})"
        got = _array(_call(causal_mask, T, what=what), (T, T), what)
        if got.dtype != np.bool_:
            fail(f"{what} should have dtype bool, got {got.dtype}")
        if not np.array_equal(got, ref.causal_mask(T)):
            i, j = np.argwhere(got != ref.causal_mask(T))[0]
            fail(f"{what}: entry ({i}, {j}) is {bool(got[i, j])}; query {i} "
                 f"{'may' if j <= i else 'may not'} attend to key {j}")


def causal_mask_rejects_bad_input(causal_mask: Callable) -> None:
    """causal_mask raises ValueError for T = 0, a negative T and a non-integer T."""
    _call(causal_mask, 2, what="causal_mask(2)")
    for T in (0, -3, 2.5):
        expect_value_error(causal_mask, (T,), f"causal_mask({T!r})")


# --- scaled_dot_product_attention -----------------------------------------------------------


def attention_matches_reference(attention: Callable, seed: int = 4) -> None:
    """Unbatched attention (T_q == T_k and T_q != T_k) gives the reference output and weights."""
    rng = np.random.default_rng(seed)
    for T_q, T_k, d_k, d_v in [(1, 1, 1, 1), (4, 4, 8, 3), (2, 7, 5, 4), (6, 3, 2, 6)]:
        Q, K, V = rng.normal(size=(T_q, d_k)), rng.normal(size=(T_k, d_k)), rng.normal(size=(T_k, d_v))
        what = f"attention with T_q = {T_q}, T_k = {T_k}, d_k = {d_k}, d_v = {d_v}"
        out, w, exp_out, exp_w = _attention(attention, Q, K, V, what=what)
        with explain(lambda: _hint(w, out, Q, K, V, None)):
            assert_close(w, exp_w, f"{what}: weights", rtol=RTOL, atol=ATOL)
            assert_close(out, exp_out, f"{what}: output", rtol=RTOL, atol=ATOL)


def attention_batched(attention: Callable, seed: int = 5) -> None:
    """Leading batch dimensions broadcast: each batch entry equals unbatched attention."""
    rng = np.random.default_rng(seed)
    cases = [((3, 5, 4), (3, 6, 4), (3, 6, 2)),
             ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 3)),
             ((2, 3, 5, 4), (3, 6, 4), (1, 6, 2)),
             ((4, 2, 8), (2, 8), (2, 5))]
    for sQ, sK, sV in cases:
        Q, K, V = rng.normal(size=sQ), rng.normal(size=sK), rng.normal(size=sV)
        what = f"attention with Q {sQ}, K {sK}, V {sV}"
        out, w, exp_out, exp_w = _attention(attention, Q, K, V, what=what)
        with explain(lambda: _hint(w, out, Q, K, V, None)):
            assert_close(w, exp_w, f"{what}: weights", rtol=RTOL, atol=ATOL)
            assert_close(out, exp_out, f"{what}: output", rtol=RTOL, atol=ATOL)
        # Independent of the reference: loop over the batch with unbatched inputs.
        batch = out.shape[:-2]
        Qb, Kb, Vb = (np.broadcast_to(a, (*batch, *a.shape[-2:])) for a in (Q, K, V))
        for idx in np.ndindex(*batch):
            o1, _ = ref.scaled_dot_product_attention(Qb[idx], Kb[idx], Vb[idx])
            assert_close(out[idx], o1, f"{what}: batch entry {idx}", rtol=RTOL, atol=ATOL)


def attention_with_mask(attention: Callable, seed: int = 6) -> None:
    """A bool mask (True = may attend) of shape (T_q, T_k) or (B, 1, 1, T_k) is applied."""
    rng = np.random.default_rng(seed)
    B, H, T_q, T_k, d_k, d_v = 2, 3, 4, 6, 5, 2
    Q, K, V = (rng.normal(size=(B, H, T_q, d_k)), rng.normal(size=(B, H, T_k, d_k)),
               rng.normal(size=(B, H, T_k, d_v)))
    lengths = np.array([4, 6])  # padding: batch entry 0 has 4 real keys
    cases = {
        "a random (T_q, T_k) mask": some_true_per_row(rng, (T_q, T_k)),
        "a (B, 1, 1, T_k) padding mask": (np.arange(T_k) < lengths[:, None])[:, None, None, :],
        "a random (B, H, T_q, T_k) mask": some_true_per_row(rng, (B, H, T_q, T_k)),
    }
    for name, mask in cases.items():
        what = f"attention with {name}"
        out, w, exp_out, exp_w = _attention(attention, Q, K, V, mask, what=what)
        if np.any(np.broadcast_to(~mask, w.shape) & (np.abs(w) > 0)):
            fail(f"{what}: a key where the mask is False got a nonzero weight "
                 "(True means 'may attend')")
        with explain(lambda: _hint(w, out, Q, K, V, mask)):
            assert_close(w, exp_w, f"{what}: weights", rtol=RTOL, atol=ATOL)
            assert_close(out, exp_out, f"{what}: output", rtol=RTOL, atol=ATOL)


def attention_causal(attention: Callable, seed: int = 7) -> None:
    """With a causal mask, changing future keys and values leaves earlier outputs unchanged."""
    rng = np.random.default_rng(seed)
    T, d_k, d_v = 6, 4, 3
    mask = np.tril(np.ones((T, T), dtype=bool))
    Q, K, V = rng.normal(size=(2, T, d_k)), rng.normal(size=(2, T, d_k)), rng.normal(size=(2, T, d_v))
    what = "attention with a causal mask"
    out, w, exp_out, exp_w = _attention(attention, Q, K, V, mask, what=what)
    with explain(lambda: _hint(w, out, Q, K, V, mask)):
        assert_close(w, exp_w, f"{what}: weights", rtol=RTOL, atol=ATOL)
        assert_close(out, exp_out, f"{what}: output", rtol=RTOL, atol=ATOL)
    for t in range(T - 1):
        K2, V2 = K.copy(), V.copy()
        K2[:, t + 1:] = rng.normal(scale=5.0, size=K2[:, t + 1:].shape)
        V2[:, t + 1:] = rng.normal(scale=5.0, size=V2[:, t + 1:].shape)
        w2 = f"{what} after changing keys and values after position {t}"
        out2, _ = _pair(_call(attention, Q.copy(), K2, V2, mask.copy(), what=w2),
                        out.shape, w.shape, w2)
        # Plain arrays: an ndarray subclass's operators could answer "equal".
        if not np.allclose(np.asarray(out2)[:, : t + 1], np.asarray(out)[:, : t + 1],
                           rtol=1e-12, atol=1e-12):
            fail(f"{w2}: outputs at positions 0..{t} changed, so the future leaks into the past")


def attention_mask_far_scores(attention: Callable, seed: int = 8) -> None:
    """Masked keys get weight 0 even when every allowed score is around -2e4 (no finite fill)."""
    rng = np.random.default_rng(seed)
    T_q, T_k, d_k, d_v = 4, 5, 4, 3
    c = np.sqrt(2e4 * np.sqrt(d_k))  # first coordinates give every score an offset of -2e4
    Q = np.concatenate([np.full((T_q, 1), c), rng.normal(size=(T_q, d_k - 1))], axis=1)
    K = np.concatenate([np.full((T_k, 1), -c), rng.normal(size=(T_k, d_k - 1))], axis=1)
    V = rng.normal(size=(T_k, d_v))
    mask = some_true_per_row(rng, (T_q, T_k), p=0.5)
    what = "attention with a mask and scores around -2e4"
    out, w, exp_out, exp_w = _attention(attention, Q, K, V, mask, what=what)
    with explain(lambda: _hint(w, out, Q, K, V, mask)):
        assert_close(w, exp_w, f"{what}: weights", rtol=1e-6, atol=1e-9)
        assert_close(out, exp_out, f"{what}: output", rtol=1e-6, atol=1e-9)


def attention_fully_masked_rows(attention: Callable, seed: int = 9) -> None:
    """A query that may attend to no key gets zero weights and a zero output, never NaN."""
    rng = np.random.default_rng(seed)
    T_q, T_k, d_k, d_v = 4, 5, 3, 2
    Q, K, V = rng.normal(size=(2, T_q, d_k)), rng.normal(size=(2, T_k, d_k)), rng.normal(size=(2, T_k, d_v))
    mask = some_true_per_row(rng, (2, T_q, T_k))
    mask[0, 1] = False
    mask[1, 3] = False
    what = "attention where queries (0, 1) and (1, 3) may attend to no key"
    out, w, exp_out, exp_w = _attention(attention, Q, K, V, mask, what=what)
    for b, i in ((0, 1), (1, 3)):
        if not (np.all(np.isfinite(w[b, i])) and np.all(np.isfinite(out[b, i]))):
            fail(f"{what}: query ({b}, {i}) gives NaN or inf; it should give zeros")
        if np.any(w[b, i] != 0) or np.any(out[b, i] != 0):
            fail(f"{what}: query ({b}, {i}) should get zero weights and a zero output")
    with explain(lambda: _hint(w, out, Q, K, V, mask)):
        assert_close(w, exp_w, f"{what}: weights", rtol=RTOL, atol=ATOL)
        assert_close(out, exp_out, f"{what}: output", rtol=RTOL, atol=ATOL)


def attention_keeps_dtype(attention: Callable, seed: int = 10) -> None:
    """float32 inputs give float32 output and weights (with and without a mask); float64 give float64."""
    rng = np.random.default_rng(seed)
    for dtype in (np.float32, np.float64):
        Q, K, V = (rng.normal(size=s).astype(dtype) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3)))
        for mask in (None, some_true_per_row(rng, (3, 5))):
            what = f"attention of {np.dtype(dtype).name} inputs" + ("" if mask is None else " with a mask")
            out, w, exp_out, exp_w = _attention(attention, Q, K, V, mask, what=what)
            for name, a in (("output", out), ("weights", w)):
                if a.dtype != dtype:
                    fail(f"{what}: {name} should be {np.dtype(dtype).name}, got {a.dtype}")
            with explain(lambda: "" if mask is None else diagnose.mask_hint(w, mask)):
                assert_close(out, exp_out, f"{what}: output", rtol=1e-5, atol=1e-6)


def attention_is_stable(attention: Callable, seed: int = 11) -> None:
    """Scores with a large common offset (near +1000, or +100 in float32) give correct weights."""
    rng = np.random.default_rng(seed)
    T_q, T_k, d_k = 3, 4, 4
    for offset, dtype in ((1000.0, np.float64), (100.0, np.float32)):
        c = np.sqrt(offset * np.sqrt(d_k))
        Q = np.concatenate([np.full((T_q, 1), c), rng.normal(size=(T_q, d_k - 1))], axis=1).astype(dtype)
        K = np.concatenate([np.full((T_k, 1), c), rng.normal(size=(T_k, d_k - 1))], axis=1).astype(dtype)
        V = rng.normal(size=(T_k, 2)).astype(dtype)
        what = f"attention of {np.dtype(dtype).name} inputs with every score near {offset:g}"
        out, w, exp_out, exp_w = _attention(attention, Q, K, V, what=what)
        tol = 1e-9 if dtype == np.float64 else 2e-3
        with explain(lambda: _hint(w, out, Q, K, V, None)):
            assert_close(w, exp_w, f"{what}: weights", rtol=tol, atol=tol)
            assert_close(out, exp_out, f"{what}: output", rtol=tol, atol=tol)


def attention_rejects_bad_input(attention: Callable) -> None:
    """A 1-D Q or K, mismatched d_k or T_k, and a mask that does not broadcast raise ValueError."""
    rng = np.random.default_rng(12)
    Q, K, V = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    _call(attention, Q, K, V, what="attention of valid inputs")
    cases = {
        "a 1-D Q of shape (4,) (one query must still be (1, d_k))": (Q[0], K, V),
        "a 1-D K of shape (4,)": (Q, K[0], V[:1]),
        "Q with d_k = 4 and K with d_k = 3": (Q, rng.normal(size=(5, 3)), V),
        "K with 5 rows and V with 4 rows": (Q, K, rng.normal(size=(4, 2))),
        "a mask of shape (4, 5) for scores of shape (3, 5)": (Q, K, V, np.ones((4, 5), dtype=bool)),
        "a mask of shape (3, 4) for scores of shape (3, 5)": (Q, K, V, np.ones((3, 4), dtype=bool)),
    }
    for what, args in cases.items():
        expect_value_error(attention, args, f"attention with {what}")


knowledge_check = _knowledge.check_for("ex02_numpy_attention", __name__)
