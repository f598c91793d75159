"""Correct alternative: no index anywhere, only iterator chains (fold, zip, map, sum).

fails: none
"""
# %% softmax
%%rust
fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
    let m = row
        .iter()
        .copied()
        .reduce(f64::max)
        .ok_or_else(|| String::from("softmax of an empty row is undefined"))?;
    let exps: Vec<f64> = row.iter().map(|x| (x - m).exp()).collect();
    let total: f64 = exps.iter().sum();
    Ok(exps.into_iter().map(|e| e / total).collect())
}
# %% scaled_dot_product_attention
%%rust
fn width(name: &str, m: &[Vec<f64>]) -> Result<usize, String> {
    let w = m.first().map(|r| r.len()).unwrap_or(0);
    if w == 0 || m.iter().any(|r| r.len() != w) {
        return Err(format!("{} must be a non-empty matrix with rows of one non-zero length", name));
    }
    Ok(w)
}

fn scaled_dot_product_attention(
    q: &[Vec<f64>],
    k: &[Vec<f64>],
    v: &[Vec<f64>],
) -> Result<Vec<Vec<f64>>, String> {
    let (d_k, d_k_keys, d_v) = (width("Q", q)?, width("K", k)?, width("V", v)?);
    if d_k != d_k_keys || k.len() != v.len() {
        return Err(format!("shapes do not fit: Q has d_k = {}, K has {}; K has {} rows, V has {}",
                           d_k, d_k_keys, k.len(), v.len()));
    }
    let scale = (d_k as f64).sqrt().recip();
    q.iter()
        .map(|qi| {
            let scores: Vec<f64> = k
                .iter()
                .map(|kj| qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>() * scale)
                .collect();
            let w = softmax(&scores)?;
            Ok(w.iter().zip(v).fold(vec![0.0; d_v], |acc, (wj, vj)| {
                acc.iter().zip(vj).map(|(a, x)| a + wj * x).collect()
            }))
        })
        .collect()
}
