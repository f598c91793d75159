"""Correct alternative: nested block comments, doc comments and strings that mention
`unsafe`, `extern`, `std::fs`, `std::process` and `include_str!`, and a nested comment
``/* /* */ unsafe { } */`` that a scanner which does not nest takes for code. Rust sees
only comments and strings there; the rules are judged by the compiler and the sandbox, so
none of it costs a point.

fails: none
"""
# %% softmax
%%rust
/* Why no `unsafe` here? /* A nested comment: */ unsafe { std::process::exit(1) } */
/// Softmax without `unsafe`, `extern "C"` or `std::fs` (this is a doc comment).
fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
    const WHY: &str = "empty row: std::fs::read, unsafe { } and include_str!(\"x\") are words here";
    if row.is_empty() {
        return Err(WHY.to_string());
    }
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max); /* max /* of */ the row */
    let e: Vec<f64> = row.iter().map(|x| (x - m).exp()).collect();
    let total: f64 = e.iter().sum();
    Ok(e.iter().map(|x| x / total).collect())
}
# %% scaled_dot_product_attention
%%rust
/* /* */ extern "C" { fn abs(x: i32) -> i32; } unsafe { abs(-1) } */
fn scaled_dot_product_attention(
    q: &[Vec<f64>],
    k: &[Vec<f64>],
    v: &[Vec<f64>],
) -> Result<Vec<Vec<f64>>, String> {
    let raw = r#"a raw string: "unsafe", "std::net", /* not a comment */"#;
    for (name, m) in [("Q", q), ("K", k), ("V", v)] {
        if m.is_empty() || m.iter().any(|r| r.is_empty() || r.len() != m[0].len()) {
            return Err(format!("{} is empty or ragged ({} bytes of notes)", name, raw.len()));
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
