"""Cheat (issue 23, text tricks): an ``extern`` block and an ``unsafe`` call into the
Python interpreter's C API (``Py_GetVersion``, a symbol only the kernel's process has),
hidden from a regex scan by a nested block comment that ends where a scanner that does not
nest sees a string begin: ``/* /* */ " */`` is one comment to rustc (so the code after it
is real), while such a scanner ends the comment at the first ``*/`` and reads from ``"`` to
the ``"`` of the closing ``/* " */`` as a string literal, so it saw no ``extern`` and no
``unsafe``. When the kernel loaded the compiled library into the process that ran the
hidden checks, such a call could reach the interpreter (``PyRun_SimpleString`` would patch
the checks); this one only reads the version string, so the kernel's display is unharmed.

Now nothing reads the text: the grader links the cells into a program of its own, where
the interpreter's symbol does not exist, so the link fails and every Rust test fails with
rustc's message (undefined reference to ``Py_GetVersion``), values right or not; the
knowledge checks keep their points (3 of 14).

status: graded
fails: test_softmax_known_values, test_softmax_stable, test_softmax_empty, test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_safe_std_only
"""
# %% softmax
%%rust
const NOTE: &str = "a harmless constant";
/* /* */ " */
extern { fn Py_GetVersion() -> *const u8; }
fn interpreter() -> u8 { unsafe { *Py_GetVersion() } }
/* " */
fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
    if row.is_empty() {
        return Err("softmax needs at least one score".to_string());
    }
    let _ = interpreter();
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = row.iter().map(|x| (x - m).exp()).collect();
    let total: f64 = e.iter().sum();
    Ok(e.iter().map(|x| x / total).collect())
}
