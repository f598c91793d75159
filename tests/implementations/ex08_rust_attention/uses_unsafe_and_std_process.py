"""Wrong for this exercise, though its values are right: the softmax reads the row with
`unsafe { get_unchecked }`, so the crate does not compile under #![forbid(unsafe_code)]:
only the safe-std test fails. (The attention's unused `use std::process;` costs nothing:
nothing in the grader's sandbox could be started anyway.)

fails: test_safe_std_only
"""
# %% softmax
%%rust
fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
    if row.is_empty() {
        return Err("empty row".to_string());
    }
    let mut m = f64::NEG_INFINITY;
    for i in 0..row.len() {
        m = m.max(unsafe { *row.get_unchecked(i) });
    }
    let exps: Vec<f64> = row.iter().map(|x| (x - m).exp()).collect();
    let total: f64 = exps.iter().sum();
    Ok(exps.iter().map(|e| e / total).collect())
}
# %% scaled_dot_product_attention
%%rust
use std::process;

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
    let mut out = Vec::new();
    for qi in q {
        let scores: Vec<f64> =
            k.iter().map(|kj| qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>() * scale).collect();
        let w = softmax(&scores)?;
        out.push((0..v[0].len()).map(|c| w.iter().zip(v).map(|(wj, vj)| wj * vj[c]).sum()).collect());
    }
    Ok(out)
}
