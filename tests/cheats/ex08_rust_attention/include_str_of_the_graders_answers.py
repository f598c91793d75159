"""Cheat (issue 23, text tricks): a compile-time read of a file of the grader's, the
knowledge checks' answers (``autograder/checks/knowledge.py`` of the course folder),
written ``include_str !(...)`` with a space before the ``!`` (valid Rust) so that a regex
scan for ``include_str!`` missed it. The functions themselves are right.

Now rustc runs in a sandbox that shows only ``/usr``, the toolchain, the crate's sources
and an output folder: the file is not there, so the crate does not compile ("couldn't
read ...", pointing at this cell) and every Rust test fails; the knowledge checks keep
their points (3 of 14). The kernel's own sandbox does not hold the course either.

status: graded
fails: test_softmax_known_values, test_softmax_stable, test_softmax_empty, test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_safe_std_only
"""
# %% softmax
%%rust
const ANSWERS: &str = include_str !("{REPO}/autograder/checks/knowledge.py");

fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
    if row.is_empty() {
        return Err(format!("softmax needs a score ({} bytes of answers at hand)", ANSWERS.len()));
    }
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = row.iter().map(|x| (x - m).exp()).collect();
    let total: f64 = e.iter().sum();
    Ok(e.iter().map(|x| x / total).collect())
}
