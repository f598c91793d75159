"""Wrong, and made to leak: softmax returns an Err holding the row for rows it was not
shown. A hidden case's inputs reach no feedback: the hidden tests name ValueError and the
case, never the Err's text.

fails: test_softmax_known_values, test_softmax_stable, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_safe_std_only
hint: raised ValueError
"""
# %% softmax
%%rust
fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
    if row.is_empty() {
        return Err("empty row".to_string());
    }
    if row.len() != 2 && row.len() != 3 {
        return Err(format!("HIDDEN-ROW={:?}", row));
    }
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = row.iter().map(|x| (x - m).exp()).collect();
    let total: f64 = exps.iter().sum();
    Ok(exps.iter().map(|e| e / total).collect())
}
