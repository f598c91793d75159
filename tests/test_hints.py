"""The usual mistakes named on the rows that fail for them (the newcomer's walk of
issue 27), and a Rust compile error named as one in a hidden case.

Each test runs the check, or the visible part of a notebook's test cell, on a wrong
implementation of ``tests/implementations/`` and reads the failure the row prints."""

from __future__ import annotations

import pytest

from autograder import testing


# -- a Rust compile error in a hidden case ---------------------------------------------


def test_a_compile_error_of_the_course_keeps_its_name_and_rustc_message_in_a_hidden_case():
    """rustc's message about the learner's own cells, raised by the course's glue, carries
    no hidden input: a hidden case names it as the visible rows do, never as `Exception`."""
    from autograder.rust_source import RustCompileError

    error = RustCompileError("cell softmax, line 9: cannot add `usize` to `f64` (error[E0277])")

    def attention(Q, K, V):
        raise error

    with testing.hidden_part():
        with pytest.raises(testing.CheckFailed) as failed:
            testing.call_learner(attention, [[1.0]], [[1.0]], [[1.0]], what="attention of 1 x 1")
        assert testing.raised(error) == f"RustCompileError: {error}"
    assert str(failed.value) == f"attention of 1 x 1: raised RustCompileError: {error}"


def test_a_learners_exception_named_like_a_compile_error_stays_hidden():
    """Only the course's own class keeps its message: a learner's exception of that name
    (the checker's stand-in, of the module ``learner``) is its built-in kind."""
    from autograder.session_errors import learner_exception as _learner_exception

    posing = _learner_exception({"type": "RustCompileError", "kinds": ["Exception"],
                                 "message": "HIDDEN-ROW=[0.25]"})
    local = type("RustCompileError", (Exception,), {})("HIDDEN-ROW=[0.25]")
    with testing.hidden_part():
        for exc in (posing, local):
            assert not testing.course_raised(exc)
            assert testing.raised(exc) == "Exception (a hidden case: its message is not shown)"


def test_a_compile_error_out_of_a_hidden_part_keeps_its_message(tmp_path):
    """A hidden part that calls the Rust function itself: the row says the cells do not
    compile (the checker's run_test), where another exception is its kind only."""
    from autograder.checker import run_test
    from autograder.session import Session
    from autograder.rust_source import RustCompileError

    from test_wire import _kernel

    def softmax(row):
        raise RustCompileError("cell softmax, line 3: mismatched types (error[E0308])")

    def leaky(row):
        raise ValueError(f"HIDDEN-ROW={row!r}")

    session = Session(_kernel({}), tmp_path)
    code = "x = 1\n### BEGIN HIDDEN TESTS\nf([0.25])\n### END HIDDEN TESTS\n"
    assert run_test(session, code, {"f": softmax}, "t") == (
        "RustCompileError", "in a hidden case of this test: cell softmax, line 3: mismatched "
        "types (error[E0308])")
    kind, message = run_test(session, code, {"f": leaky}, "t")
    assert kind == "ValueError" and "HIDDEN" not in message


# -- the notebooks' wrong implementations, run by the checks ----------------------------


def _variant(assignment: str, name: str, cell: str, namespace: dict | None = None):
    """The function of cell ``cell`` of variant ``name``, defined in ``namespace`` (plus
    the notebook's usual imports)."""
    import math

    import numpy as np
    from submissions import parse_variant, variants

    cells, _ = parse_variant(variants(assignment)[name])
    ns = {"math": math, "np": np, **(namespace or {})}
    exec(compile(cells[cell], f"<{name}>", "exec"), ns)
    return ns[cell]


def _failure(check, *args, hidden: bool = True, **kwargs) -> str:
    with testing.hidden_part(hidden):
        with pytest.raises(testing.CheckFailed) as failed:
            check(*args, **kwargs)
    return str(failed.value)


def test_ex01_softmax_over_the_queries_is_named_where_t_q_is_1():
    """The hidden case of test_attention_rectangular with one query: a softmax over the
    single query gives every key weight 1, the output the sum of the values."""
    from autograder.checks import ex01
    from autograder.reference.python_attention import softmax

    wrong = _variant("ex01_python_attention", "attention_softmax_over_queries",
                     "scaled_dot_product_attention", {"softmax": softmax})
    message = _failure(ex01.attention_rectangular, wrong)
    assert "T_q = 1" in message and "Hint: your output matches attention with each " \
        "softmax taken over the queries" in message and "the sum of the values" in message


def _visible_failure(assignment: str, test: str, namespace: dict) -> str:
    """The failure of the visible parts of the solution notebook's test cell ``test`` run
    with ``namespace`` (the learner's names), as the checker runs them."""
    import nbformat

    from autograder.checker import segments
    from autograder.config import SOLUTIONS
    from autograder.notebook import nbgrader_meta

    nb = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    source = next(c.source for c in nb.cells if nbgrader_meta(c).get("grade_id") == test)
    with pytest.raises(testing.CheckFailed) as failed:
        for hidden, code in segments(source):
            if not hidden:
                exec(compile(code, f"<{test}>", "exec"), namespace)
    return str(failed.value)


def test_ex08_softmax_without_the_max_is_named_on_the_visible_stable_row():
    """Rust's f64 exp(1000) is inf and inf / inf NaN: the visible row names the mistake."""
    import math

    def softmax(row):  # what the Rust softmax without the max subtraction returns
        exps = [math.exp(x) if x < 700 else math.inf for x in row]
        return [e / sum(exps) for e in exps]

    message = _visible_failure("ex08_rust_attention", "test_softmax_stable",
                               {"softmax": softmax, "math": math})
    assert message.startswith("softmax([1000, 1001]): got nan at index (0,)")
    assert "Hint: some weights are NaN or infinite: subtract the row's maximum" in message


@pytest.mark.parametrize("variant,words", [
    ("no_rescaling_of_accumulator", "the accumulator not rescaled"),
    ("no_rescaling_of_running_sum", "the running sum l (the normaliser) not rescaled"),
    ("no_rescaling_at_all", "neither the accumulator nor the running sum l rescaled"),
])
def test_ex06_the_rescale_left_out_is_named_on_visible_and_hidden_rows(variant, words):
    """Each form of the missing exp(m_old - m_new) rescale, on the visible worked example
    and dense comparisons, and on the hidden cases of the checks."""
    import numpy as np

    from autograder.checks import ex06

    wrong = _variant("ex06_tiled_attention", variant, "tiled_attention")
    hint = f"Hint: your output matches tiled attention with {words}"
    names = {"tiled_attention": wrong, "np": np, "dense_attention": ex06.dense_attention}
    for test in ("test_worked_example", "test_matches_dense", "test_any_block_size",
                 "test_rectangular", "test_causal"):
        assert hint in _visible_failure("ex06_tiled_attention", test, dict(names)), test
    for check in (ex06.matches_dense, ex06.rectangular, ex06.causal_rectangular,
                  ex06.stable_large_scores):
        assert hint in _failure(check, wrong), check.__name__
    # the measured call of the memory tests (in this process here)
    assert hint in _failure(ex06.peak_memory, wrong, is_causal=False, T=512)


def test_ex02_an_inverted_mask_is_named_on_the_visible_rows():
    """The visible rows of test_attention_mask, test_attention_causal and
    test_attention_fully_masked name the mask read the other way round; the right
    implementation gets no such hint."""
    import numpy as np

    from autograder import diagnose
    from autograder.reference.numpy_attention import scaled_dot_product_attention, softmax

    wrong = _variant("ex02_numpy_attention", "attention_inverted_mask",
                     "scaled_dot_product_attention", {"softmax": softmax})
    Q3 = np.array([[0.0, 0.0, 0.0, 0.0], [0.3, 0.3, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]])
    K3 = np.array([[-1.0, -1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    V3 = np.array([[10.0, 1.0], [20.0, 2.0], [30.0, 3.0]])
    names = {"np": np, "Q3": Q3, "K3": K3, "V3": V3, "scaled_dot_product_attention": wrong}
    hint = "Hint: your weights match attention with the mask's meaning inverted"
    for test in ("test_attention_mask", "test_attention_causal", "test_attention_fully_masked"):
        assert hint in _visible_failure("ex02_numpy_attention", test, dict(names)), test
    for mask in (np.array([[True, True, False]] * 3), np.tri(3, dtype=bool),
                 np.array([[False, False, False], [True, True, True], [True, False, True]])):
        _, right = scaled_dot_product_attention(Q3, K3, V3, mask)
        assert diagnose.mask_hint(right, mask) == ""
        assert diagnose.mask_hint(wrong(Q3, K3, V3, mask)[1], mask) != ""


@pytest.mark.parametrize("variant,words", [
    ("mha_split_only_without_transpose", "the heads split by reshaping"),
    ("mha_split_without_transpose", "the heads split and merged by reshaping"),
])
def test_ex05_heads_split_without_the_transpose_is_named_on_the_causal_and_permutation_rows(
        variant, words):
    """The future leaks into the past and permuting the tokens breaks: both rows name the
    split without the transpose, visible (ex05.mha_hint) and hidden."""
    torch = pytest.importorskip("torch")
    from autograder.checks import ex05
    from autograder.reference.torch_attention import scaled_dot_product_attention

    cls = _variant("ex05_torch_attention", variant, "MultiHeadAttention",
                   {"torch": torch, "nn": torch.nn,
                    "scaled_dot_product_attention": scaled_dot_product_attention})
    hint = f"Hint: your output matches multi-head attention with {words}"
    assert hint in _failure(ex05.mha_permutation_equivariant, cls)
    assert hint in _failure(ex05.mha_is_causal, cls)
    torch.manual_seed(0)
    mha, x = cls(8, 2), torch.randn(2, 5, 8)
    with torch.no_grad():
        out = mha(x, is_causal=True)
    assert ex05.mha_hint(mha, out, x, is_causal=True).startswith(hint[len("Hint: "):])
