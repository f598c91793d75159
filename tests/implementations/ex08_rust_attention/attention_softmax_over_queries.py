"""Wrong: the softmax normalises each key's column over the queries, not each query's row.

fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable
hint: softmax taken over the queries
hint: with one query every weight is then 1 and the output is the sum of the values
"""
# %% scaled_dot_product_attention
%%rust
fn scaled_dot_product_attention(
    q: &[Vec<f64>],
    k: &[Vec<f64>],
    v: &[Vec<f64>],
) -> Result<Vec<Vec<f64>>, String> {
    for (name, m) in [("Q", q), ("K", k), ("V", v)] {
        if m.is_empty() || m.iter().any(|r| r.is_empty() || r.len() != m[0].len()) {
            return Err(format!("{} is empty or ragged", name));
        }
    }
    if q[0].len() != k[0].len() || k.len() != v.len() {
        return Err("Q, K and V do not fit together".to_string());
    }
    let scale = 1.0 / (q[0].len() as f64).sqrt();
    let scores: Vec<Vec<f64>> = q
        .iter()
        .map(|qi| k.iter().map(|kj| qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>() * scale).collect())
        .collect();
    // weights[i][j]: softmax over i (the queries) for each key j
    let mut weights = vec![vec![0.0; k.len()]; q.len()];
    for j in 0..k.len() {
        let column: Vec<f64> = scores.iter().map(|row| row[j]).collect();
        let w = softmax(&column)?;
        for i in 0..q.len() {
            weights[i][j] = w[i];
        }
    }
    Ok(weights
        .iter()
        .map(|w| (0..v[0].len()).map(|c| w.iter().zip(v).map(|(wj, vj)| wj * vj[c]).sum()).collect())
        .collect())
}
