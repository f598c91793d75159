"""Independent correct solution in Rust: the matrices copied into flat row-major buffers,
scores as one T_q x T_k buffer, softmax applied in place on slices of it.

fails: none
"""
# %% softmax
%%rust
fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
    let mut out = row.to_vec();
    normalise_in_place(&mut out)?;
    Ok(out)
}

fn normalise_in_place(buf: &mut [f64]) -> Result<(), String> {
    let mut peak = match buf.first() {
        Some(&x) => x,
        None => return Err("no scores to normalise".to_owned()),
    };
    for &x in buf.iter() {
        if x > peak {
            peak = x;
        }
    }
    let mut norm = 0.0;
    for x in buf.iter_mut() {
        *x = (*x - peak).exp();
        norm += *x;
    }
    for x in buf.iter_mut() {
        *x /= norm;
    }
    Ok(())
}
# %% scaled_dot_product_attention
%%rust
fn flatten(label: char, m: &[Vec<f64>]) -> Result<(usize, usize, Vec<f64>), String> {
    let cols = if m.is_empty() { 0 } else { m[0].len() };
    if cols == 0 {
        return Err(format!("matrix {} has no entries", label));
    }
    let mut flat = Vec::with_capacity(m.len() * cols);
    for r in m {
        if r.len() != cols {
            return Err(format!("matrix {} is not rectangular", label));
        }
        flat.extend_from_slice(r);
    }
    Ok((m.len(), cols, flat))
}

fn scaled_dot_product_attention(
    q: &[Vec<f64>],
    k: &[Vec<f64>],
    v: &[Vec<f64>],
) -> Result<Vec<Vec<f64>>, String> {
    let (nq, dk, fq) = flatten('Q', q)?;
    let (nk, dk2, fk) = flatten('K', k)?;
    let (nv, dv, fv) = flatten('V', v)?;
    if dk != dk2 || nk != nv {
        return Err("Q, K and V have incompatible shapes".to_owned());
    }
    let inv = 1.0 / f64::sqrt(dk as f64);
    let mut s = vec![0.0; nq * nk];
    for i in 0..nq {
        for j in 0..nk {
            s[i * nk + j] = (0..dk).map(|c| fq[i * dk + c] * fk[j * dk + c]).sum::<f64>() * inv;
        }
        normalise_in_place(&mut s[i * nk..(i + 1) * nk])?;
    }
    Ok((0..nq)
        .map(|i| (0..dv).map(|c| (0..nk).map(|j| s[i * nk + j] * fv[j * dv + c]).sum()).collect())
        .collect())
}
