"""Wrong: the output loop runs over d_k columns instead of d_v, so indexing V past its
width panics ("index out of bounds") whenever d_k > d_v, and the rows are short when d_k < d_v.
The panic reaches Python as an exception with its message and line; grading goes on.

fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable
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
    let d_k = q[0].len();
    let scale = 1.0 / (d_k as f64).sqrt();
    let mut out = Vec::new();
    for qi in q {
        let scores: Vec<f64> =
            k.iter().map(|kj| (0..d_k).map(|c| qi[c] * kj[c]).sum::<f64>() * scale).collect();
        let w = softmax(&scores)?;
        let mut row = Vec::new();
        for c in 0..d_k {
            row.push((0..k.len()).map(|j| w[j] * v[j][c]).sum());
        }
        out.push(row);
    }
    Ok(out)
}
