"""Correct alternative: the cell also holds a helper that would save the weights to a file
through ``std::fs`` and is never called, and an unused ``use std::process;``. The rule
"no files, network or processes" is the sandbox's: a use that never runs costs nothing.

fails: none
"""
# %% softmax
%%rust
use std::process;

/// Never called: it would fail in the grader's sandbox, which has no files.
#[allow(dead_code)]
fn save(weights: &[f64], path: &str) -> std::io::Result<()> {
    let text: Vec<String> = weights.iter().map(|w| w.to_string()).collect();
    std::fs::write(path, text.join("\n"))
}

fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
    if row.is_empty() {
        return Err("softmax needs at least one score".to_string());
    }
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = row.iter().map(|x| (x - m).exp()).collect();
    let total: f64 = e.iter().sum();
    Ok(e.iter().map(|x| x / total).collect())
}
