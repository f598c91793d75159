"""Wrong: the scores are not divided by sqrt(d_k).

fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable
hint: without the 1/sqrt(d_k) scale
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
    let mut out = Vec::new();
    for qi in q {
        let scores: Vec<f64> = k.iter().map(|kj| qi.iter().zip(kj).map(|(a, b)| a * b).sum()).collect();
        let w = softmax(&scores)?;
        out.push((0..v[0].len()).map(|c| w.iter().zip(v).map(|(wj, vj)| wj * vj[c]).sum()).collect());
    }
    Ok(out)
}
