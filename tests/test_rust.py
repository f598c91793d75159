"""The Rust glue (autograder/rust.py), the %%rust cell magic, the Rust reference, ex08's
checks on the kernel's Rust functions and the nbgrader preprocessor that writes Rust stubs
(the grader's own build of the cells: tests/test_rust_build.py). Needs rustc (`.ci/run`
installs Debian's when none is found)."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap

import nbformat
import pytest

from autograder import rust, rust_source
from autograder.checks import ex08
from autograder.reference import python_attention

S = rust.RustSource
SOFTMAX = textwrap.dedent("""
    fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
        if row.is_empty() {
            return Err("empty row".to_string());
        }
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = row.iter().map(|x| (x - m).exp()).collect();
        let total: f64 = e.iter().sum();
        Ok(e.iter().map(|x| x / total).collect())
    }
""")


@pytest.fixture(scope="module")
def reference():
    assert rust_source.find_rustc(), rust_source.INSTALL_HINT
    return rust.load()


def test_reference_agrees_with_python_to_1e12(reference):
    softmax = reference.functions["softmax"]
    attention = reference.functions["scaled_dot_product_attention"]
    Q = [[0.0, 0.0, 0.0, 0.0], [0.3, 0.3, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]]
    K = [[-1.0, -1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    V = [[10.0, 1.0], [20.0, 2.0], [30.0, 3.0]]
    out = attention(Q, K, V)
    assert [[round(x, 4) for x in row] for row in out] == [
        [20.0, 2.0], [21.9706, 2.1971], [23.2016, 2.3202]]
    rng = random.Random(0)
    for T_q, T_k, d_k, d_v in [(1, 1, 1, 1), (3, 7, 5, 2), (8, 4, 16, 3)]:
        M = [[[rng.gauss(0, 1) for _ in range(c)] for _ in range(r)]
             for r, c in [(T_q, d_k), (T_k, d_k), (T_k, d_v)]]
        got, want = attention(*M), python_attention.scaled_dot_product_attention(*M)
        assert max(abs(a - b) for ra, rb in zip(got, want) for a, b in zip(ra, rb)) < 1e-12
    assert softmax([1000.0, 1001.0]) == pytest.approx([0.2689414213699951, 0.7310585786300049],
                                                      rel=1e-12)
    assert type(softmax([1.0])[0]) is float


def test_all_of_ex01s_checks_pass_on_the_reference(reference):
    softmax = reference.functions["softmax"]
    attention = reference.functions["scaled_dot_product_attention"]
    for check in (ex08.softmax_matches_reference, ex08.softmax_is_stable,
                  ex08.softmax_rejects_empty):
        check(softmax)
    for check in (ex08.attention_matches_reference, ex08.attention_rectangular,
                  ex08.attention_is_stable, ex08.attention_rejects_bad_input):
        check(attention)
    ex08.uses_only_safe_std(softmax, attention)
    # A Python function of the same name (the pure-Python reference) is not accepted.
    with pytest.raises(AssertionError, match="Rust function compiled from your %%rust cell"):
        ex08.softmax_is_stable(python_attention.softmax)


def test_err_is_value_error_and_numpy_arrays_are_accepted(reference):
    import numpy as np

    attention = reference.functions["scaled_dot_product_attention"]
    with pytest.raises(ValueError, match="K has T_k = 2 rows but V has 1"):
        attention([[1.0]], [[1.0], [2.0]], [[1.0]])
    with pytest.raises(ValueError, match="Q is ragged"):
        attention([[1.0], [1.0, 2.0]], [[1.0]], [[1.0]])
    with pytest.raises(TypeError, match="Q\\[0\\] must be a sequence of numbers"):
        attention([["a"]], [[1.0]], [[1.0]])
    Q = np.arange(6.0).reshape(3, 2)
    assert attention(Q, Q, Q) == attention(Q.tolist(), Q.tolist(), Q.tolist())


def test_panic_todo_and_compile_errors_point_at_the_learners_lines():
    body = "\nfn softmax(row: &[f64]) -> Result<Vec<f64>, String> {\n    let m = row[5];\n" \
           "    Ok(vec![m])\n}\n"
    lib = rust.compile_rust([S("cell_softmax.rs", body)])
    with pytest.raises(rust_source.RustPanic, match=r"index out of bounds.*cell_softmax\.rs:3:13"):
        lib.functions["softmax"]([1.0])
    stub = "\nfn softmax(row: &[f64]) -> Result<Vec<f64>, String> {\n    todo!()\n}\n"
    with pytest.raises(NotImplementedError, match="not yet implemented"):
        rust.compile_rust([S("cell_softmax.rs", stub)]).functions["softmax"]([1.0])
    with pytest.raises(rust_source.RustCompileError) as err:
        rust.compile_rust([S("cell_softmax.rs", body.replace("row[5]", "row[5] + 1"))])
    assert "--> cell_softmax.rs:3:" in str(err.value) and "E0277" in str(err.value)
    # ...and its first line names the cell, the line (as the notebook numbers it) and why
    assert str(err.value).splitlines()[0] == (
        "cell softmax, line 3 (let m = row[5] + 1;): cannot add `{integer}` to `f64` "
        "(error[E0277])"), str(err.value)
    # A changed signature is reported with the one the course calls.
    with pytest.raises(rust_source.RustCompileError, match=r"(?s)keep it exactly.*fn softmax\(row: &\[f64\]\)"):
        rust.compile_rust([S("cell_softmax.rs", "fn softmax(row: Vec<f64>) -> Result<Vec<f64>, "
                                                "String> { Ok(row) }")])


def test_an_endless_loop_is_stopped_by_an_interrupt():
    """A cell timeout interrupts the kernel: the call returns KeyboardInterrupt (in a child
    process, whose spinning Rust thread ends with it)."""
    # If it hangs, every thread's stack goes to stderr (and into the failure) before the
    # test's own timeout: a run under heavy load once timed out here with nothing printed.
    code = textwrap.dedent("""
        import _thread, faulthandler, sys, threading, time
        faulthandler.dump_traceback_later(100, exit=True)
        start = time.monotonic()
        from autograder import rust
        lib = rust.compile_rust([rust.RustSource("cell_softmax.rs",
            "fn softmax(row: &[f64]) -> Result<Vec<f64>, String> { loop {} }")])
        print(f"compiled in {time.monotonic() - start:.1f} s", file=sys.stderr, flush=True)
        threading.Timer(0.5, _thread.interrupt_main).start()
        try:
            lib.functions["softmax"]([1.0])
        except KeyboardInterrupt:
            print("interrupted")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "interrupted", done.stderr


def test_cell_magic_binds_replaces_and_survives_compile_errors():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_line_magic("load_ext", "autograder.rust")
        shell.run_cell_magic("rust", "", SOFTMAX)
        assert shell.user_ns["softmax"]([0.0, 0.0]) == [0.5, 0.5]
        # The attention cell calls the softmax of the earlier cell.
        attention = rust.REFERENCE.read_text().split("/// (rows, columns)")[1]
        shell.run_cell_magic("rust", "", "/// (rows, columns)" + attention)
        assert shell.user_ns["scaled_dot_product_attention"]([[0.0]], [[1.0], [2.0]],
                                                             [[2.0], [4.0]]) == [[3.0]]
        # Running softmax's cell again, changed, replaces it (no duplicate definition).
        shell.run_cell_magic("rust", "", SOFTMAX.replace("empty row", "no scores"))
        with pytest.raises(ValueError, match="no scores"):
            shell.user_ns["scaled_dot_product_attention"]([[1.0]], [[1.0]], [[1.0]]) and \
                shell.user_ns["softmax"]([])
        # A compile error raises rustc's message and removes the stale function.
        result = shell.run_cell("%%rust\nfn softmax(row: &[f64]) -> Result<Vec<f64>, String> "
                                "{\n    Ok(1)\n}\n")
        assert isinstance(result.error_in_exec, rust_source.RustCompileError)
        assert "cell_softmax.rs:3:8" in str(result.error_in_exec)
        assert "softmax" not in shell.user_ns
        # A cell that calls it says so in one line, instead of rustc's "cannot find function"
        result = shell.run_cell("%%rust\n/// (rows, columns)" + attention)
        assert str(result.error_in_exec).splitlines()[0] == (
            "this cell calls softmax, whose cell above does not compile: fix that cell first, "
            "then run this one again")
        assert shell.run_cell("1 + 1").result == 2  # the shell goes on
    finally:
        InteractiveShell.clear_instance()


def test_release_writes_a_rust_stub_that_compiles(tmp_path):
    """nbgrader's ClearSolutions, taught by the course's preprocessor: a %%rust cell gets
    `todo!()`, not `raise NotImplementedError()`, and the stub compiles."""
    from traitlets.config import Config

    from autograder.nbgrader_settings import apply
    from autograder.nbgrader_plugins import ClearSolutionsByCellLanguage

    c = Config()
    apply(c, tmp_path)
    pp = ClearSolutionsByCellLanguage(config=c)
    meta = {"nbgrader": {"grade": False, "grade_id": "softmax", "locked": False,
                         "schema_version": 3, "solution": True, "task": False}}
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": kernel}, cells=[
        nbformat.v4.new_code_cell(
            "%%rust\nfn softmax(row: &[f64]) -> Result<Vec<f64>, String> {\n"
            "    // ### BEGIN SOLUTION\n    Ok(row.to_vec())\n    // ### END SOLUTION\n}",
            metadata=meta),
        nbformat.v4.new_code_cell("%%rust\nfn helper() {}", metadata={
            "nbgrader": {**meta["nbgrader"], "grade_id": "helper"}}),
        nbformat.v4.new_code_cell("x = 1\n### BEGIN SOLUTION\nx = 2\n### END SOLUTION",
                                  metadata={"nbgrader": {**meta["nbgrader"], "grade_id": "x"}}),
    ])
    nb, _ = pp.preprocess(nb, {})
    assert nb.cells[0].source == ("%%rust\nfn softmax(row: &[f64]) -> Result<Vec<f64>, String> {"
                                  "\n    // YOUR CODE HERE\n    todo!()\n}")
    assert nb.cells[1].source == "%%rust\n// YOUR CODE HERE\ntodo!()"
    assert nb.cells[2].source == "x = 1\n# YOUR CODE HERE\nraise NotImplementedError()"
    lib = rust.compile_rust([S("cell_softmax.rs", nb.cells[0].source.split("\n", 1)[1])])
    with pytest.raises(NotImplementedError):
        lib.functions["softmax"]([1.0])


def test_missing_rustc_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.delenv("RUSTC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CARGO_HOME", str(tmp_path))
    assert rust_source.find_rustc() is None
    with pytest.raises(rust_source.RustcNotFound, match="rustup.rs.*apt-get install rustc"):
        rust.compile_rust([S("cell_softmax.rs", SOFTMAX)])


def test_check_names_a_rust_compile_error_not_a_python_syntax_error():
    """`check` lists cells that raised; a %%rust cell is not Python, so its error is rustc's."""
    from autograder.notebook import cell_errors

    meta = {"nbgrader": {"grade": False, "grade_id": "softmax", "locked": False,
                         "schema_version": 3, "solution": True, "task": False}}
    cell = nbformat.v4.new_code_cell("%%rust\nfn softmax(row: &[f64]) -> f64 { 1 }",
                                     metadata=meta)
    cell.outputs = [nbformat.v4.new_output(
        "error", ename="RustCompileError", evalue="error[E0308]: mismatched types\n --> ...",
        traceback=["RustCompileError: rustc could not compile the Rust code:"])]
    nb = nbformat.v4.new_notebook(cells=[cell])
    assert cell_errors(nb) == [(0, "softmax", "RustCompileError: error[E0308]: mismatched types")]
