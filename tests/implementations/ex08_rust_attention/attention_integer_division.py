"""Wrong: the exponent 1/2 of sqrt(d_k) is written with integers, and 1 / 2 == 0 in Rust,
so the scale is d_k^0 = 1: no scaling at all.

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
    let scale = 1.0 / (d_k as f64).powf((1 / 2) as f64);
    let mut out = Vec::new();
    for qi in q {
        let scores: Vec<f64> =
            k.iter().map(|kj| qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>() * scale).collect();
        let w = softmax(&scores)?;
        out.push((0..v[0].len()).map(|c| w.iter().zip(v).map(|(wj, vj)| wj * vj[c]).sum()).collect());
    }
    Ok(out)
}
