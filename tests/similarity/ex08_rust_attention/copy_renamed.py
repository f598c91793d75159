"""Planted copy of correct_online_softmax (tests/implementations), in Rust: variables
renamed, comments changed and added, formatting changed.

fails: none
copy of: correct_online_softmax
"""
# %% softmax
%%rust
fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
    if row.is_empty() { return Err(String::from("empty row")); }
    // running max and running sum in a single loop
    let (mut hi, mut z) = (f64::NEG_INFINITY, 0.0);
    for &s in row {
        let hi2 = hi.max(s);
        z = z * (hi - hi2).exp() + (s - hi2).exp();
        hi = hi2;
    }
    Ok(row.iter().map(|s| (s - hi).exp() / z).collect())
}
# %% scaled_dot_product_attention
%%rust
fn scaled_dot_product_attention(
    q: &[Vec<f64>], k: &[Vec<f64>], v: &[Vec<f64>],
) -> Result<Vec<Vec<f64>>, String> {
    for (label, mat) in [("Q", q), ("K", k), ("V", v)] {
        if mat.is_empty() { return Err(format!("{} is empty", label)); }
        if mat.iter().any(|r| r.is_empty() || r.len() != mat[0].len()) {
            return Err(format!("{} is ragged", label));
        }
    }
    if q[0].len() != k[0].len() { return Err(format!("d_k {} vs {}", q[0].len(), k[0].len())); }
    if k.len() != v.len() { return Err(format!("T_k {} vs {}", k.len(), v.len())); }
    let sc = 1.0 / (q[0].len() as f64).sqrt();
    let dv = v[0].len();
    let mut res = Vec::with_capacity(q.len());
    for row in q {
        // online softmax over the keys
        let (mut hi, mut z, mut acc) = (f64::NEG_INFINITY, 0.0, vec![0.0; dv]);
        for (key, val) in k.iter().zip(v) {
            let t = row.iter().zip(key).map(|(a, b)| a * b).sum::<f64>() * sc;
            let hi2 = hi.max(t);
            let (r, w) = ((hi - hi2).exp(), (t - hi2).exp());
            z = z * r + w;
            for (o, x) in acc.iter_mut().zip(val) { *o = *o * r + w * x; }
            hi = hi2;
        }
        res.push(acc.into_iter().map(|x| x / z).collect());
    }
    Ok(res)
}
