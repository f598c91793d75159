"""Correct alternative: one pass over the keys with the online softmax (running maximum m,
normaliser l and accumulator a, rescaled by exp(m_old - m_new) when the maximum grows).

fails: none
"""
# %% softmax
%%rust
fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
    if row.is_empty() {
        return Err(String::from("softmax needs at least one score"));
    }
    // One pass for the maximum and the normaliser together.
    let (mut m, mut l) = (f64::NEG_INFINITY, 0.0);
    for &x in row {
        let m_new = m.max(x);
        l = l * (m - m_new).exp() + (x - m_new).exp();
        m = m_new;
    }
    Ok(row.iter().map(|x| (x - m).exp() / l).collect())
}
# %% scaled_dot_product_attention
%%rust
fn scaled_dot_product_attention(
    q: &[Vec<f64>],
    k: &[Vec<f64>],
    v: &[Vec<f64>],
) -> Result<Vec<Vec<f64>>, String> {
    for (name, m) in [("Q", q), ("K", k), ("V", v)] {
        if m.is_empty() {
            return Err(format!("{} has no rows", name));
        }
        if m.iter().any(|r| r.is_empty() || r.len() != m[0].len()) {
            return Err(format!("{} has empty or ragged rows", name));
        }
    }
    if q[0].len() != k[0].len() {
        return Err(format!("Q has d_k = {} but K has {}", q[0].len(), k[0].len()));
    }
    if k.len() != v.len() {
        return Err(format!("K has {} rows but V has {}", k.len(), v.len()));
    }
    let scale = 1.0 / (q[0].len() as f64).sqrt();
    let d_v = v[0].len();
    let mut out = Vec::with_capacity(q.len());
    for qi in q {
        let (mut m, mut l, mut a) = (f64::NEG_INFINITY, 0.0, vec![0.0; d_v]);
        for (kj, vj) in k.iter().zip(v) {
            let s = qi.iter().zip(kj).map(|(x, y)| x * y).sum::<f64>() * scale;
            let m_new = m.max(s);
            let (old, p) = ((m - m_new).exp(), (s - m_new).exp());
            l = l * old + p;
            for (ac, x) in a.iter_mut().zip(vj) {
                *ac = *ac * old + p * x;
            }
            m = m_new;
        }
        out.push(a.into_iter().map(|x| x / l).collect());
    }
    Ok(out)
}
