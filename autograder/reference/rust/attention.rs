// Scaled dot-product attention in pure Rust, standard library only
// (reference for ex08_rust_attention; the Python twin is autograder/reference/python_attention.py).
//
//     Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V        (Vaswani et al. 2017, eq. 1)
//
// Matrices are row-major: one Vec<f64> per row. The course's glue (autograder/rust.py)
// calls these two functions from Python; an Err becomes a ValueError there.

/// Numerically stable softmax of one row of scores, length T.
///
/// softmax(s)_j = exp(s_j - m) / sum_j' exp(s_j' - m) with m = max(s): every exponent is
/// <= 0, so scores such as [1000, 1001] do not overflow. Returns a new Vec of T weights
/// that sum to 1; Err for an empty row or a value that is not finite.
fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
    if row.is_empty() {
        return Err("softmax needs at least one score, got an empty row".to_string());
    }
    if let Some(j) = row.iter().position(|x| !x.is_finite()) {
        return Err(format!("softmax needs finite numbers, got row[{}] = {}", j, row[j]));
    }
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = row.iter().map(|&x| (x - m).exp()).collect();
    let total: f64 = exps.iter().sum();
    Ok(exps.iter().map(|&e| e / total).collect())
}

/// (rows, columns) of a matrix; Err if it is empty, has an empty row or is ragged.
fn shape(name: &str, m: &[Vec<f64>]) -> Result<(usize, usize), String> {
    if m.is_empty() {
        return Err(format!("{} must have at least one row, got none", name));
    }
    let cols = m[0].len();
    for (i, r) in m.iter().enumerate() {
        if r.is_empty() {
            return Err(format!("{}[{}] must be a non-empty row of numbers, got an empty one", name, i));
        }
        if r.len() != cols {
            return Err(format!(
                "{} is ragged: row 0 has {} entries but row {} has {}", name, cols, i, r.len()
            ));
        }
    }
    Ok((m.len(), cols))
}

/// Scaled dot-product attention: Q is T_q x d_k, K is T_k x d_k, V is T_k x d_v
/// (T_q may differ from T_k). Returns T_q rows of d_v numbers: row i is the average of
/// the rows of V weighted by softmax_j(Q[i] . K[j] / sqrt(d_k)). Err for empty or ragged
/// matrices, Q and K of different widths d_k, or K and V with different numbers of rows.
fn scaled_dot_product_attention(
    q: &[Vec<f64>],
    k: &[Vec<f64>],
    v: &[Vec<f64>],
) -> Result<Vec<Vec<f64>>, String> {
    let (_t_q, d_k) = shape("Q", q)?;
    let (t_k, d_k_keys) = shape("K", k)?;
    let (t_v, d_v) = shape("V", v)?;
    if d_k != d_k_keys {
        return Err(format!("Q has d_k = {} columns but K has {}", d_k, d_k_keys));
    }
    if t_v != t_k {
        return Err(format!("K has T_k = {} rows but V has {}", t_k, t_v));
    }
    let scale = 1.0 / (d_k as f64).sqrt();
    let mut out = Vec::with_capacity(q.len());
    for q_i in q {
        let scores: Vec<f64> = k
            .iter()
            .map(|k_j| q_i.iter().zip(k_j).map(|(a, b)| a * b).sum::<f64>() * scale)
            .collect();
        let weights = softmax(&scores)?;
        let mut row = vec![0.0; d_v];
        for (w, v_j) in weights.iter().zip(v) {
            for (acc, x) in row.iter_mut().zip(v_j) {
                *acc += w * x;
            }
        }
        out.push(row);
    }
    Ok(out)
}
