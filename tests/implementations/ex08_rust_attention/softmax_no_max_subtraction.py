"""Wrong: softmax without subtracting the maximum, so exp(1000) is inf and inf / inf is NaN.

fails: test_softmax_stable, test_attention_stable
hint: subtract the row's maximum score from every score before exp
hint: softmax([1000, 1001]): got nan at index (0,) where a finite number was expected. Hint: some weights are NaN or infinite
"""
# %% softmax
%%rust
fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
    if row.is_empty() {
        return Err("empty row".to_string());
    }
    let exps: Vec<f64> = row.iter().map(|x| x.exp()).collect();
    let total: f64 = exps.iter().sum();
    Ok(exps.iter().map(|e| e / total).collect())
}
