"""Wrong: the softmax cell does not compile (a type error: an integer where a float is
needed), so neither function exists: every Rust test scores 0, the knowledge checks keep
their points, and the rest of the class is graded as usual.

fails: test_softmax_known_values, test_softmax_stable, test_softmax_empty, test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_safe_std_only
hint: softmax([0, 1]): raised RustCompileError: your %%rust cells do not compile
"""
# %% softmax
%%rust
fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
    if row.is_empty() {
        return Err("empty row".to_string());
    }
    let m: f64 = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let total: f64 = row.iter().map(|x| (x - m).exp()).sum();
    let count: usize = 0;
    Ok(row.iter().map(|x| (x - m).exp() / total + count).collect())
}
