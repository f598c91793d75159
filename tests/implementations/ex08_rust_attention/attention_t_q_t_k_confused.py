"""Wrong: one output row per key (T_k rows) instead of per query (T_q rows); right only
when T_q == T_k, and out of bounds (a panic) when T_k > T_q.

fails: test_attention_matches_reference, test_attention_rectangular, test_attention_stable
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
    let (t, d_k, d_v) = (k.len(), q[0].len(), v[0].len());
    let scale = 1.0 / (d_k as f64).sqrt();
    let mut out = Vec::new();
    for i in 0..t {
        let scores: Vec<f64> =
            k.iter().map(|kj| (0..d_k).map(|c| q[i][c] * kj[c]).sum::<f64>() * scale).collect();
        let w = softmax(&scores)?;
        out.push((0..d_v).map(|c| (0..t).map(|j| w[j] * v[j][c]).sum()).collect());
    }
    Ok(out)
}
