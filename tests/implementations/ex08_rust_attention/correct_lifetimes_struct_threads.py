"""Correct alternative in idiomatic, unusual Rust: a ``#[derive]``d ``Shape`` struct with
an ``impl``, helper functions with lifetimes (a borrowed row iterator), generics, closures,
iterator adaptors, a trait, and the query rows computed in scoped threads
(``std::thread::scope``): all of it the standard library, safe, and fine in the grader's
sandbox.

fails: none
"""
# %% softmax
%%rust
/// The largest score, or an Err naming the empty row.
fn row_max<'a, I: IntoIterator<Item = &'a f64>>(row: I) -> Result<f64, String> {
    row.into_iter().copied().reduce(f64::max).ok_or_else(|| "softmax of an empty row".into())
}

fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
    let m = row_max(row)?;
    let shifted = |x: &f64| (x - m).exp();
    let total: f64 = row.iter().map(shifted).sum();
    Ok(row.iter().map(|x| shifted(x) / total).collect())
}
# %% scaled_dot_product_attention
%%rust
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    rows: usize,
    cols: usize,
}

impl Shape {
    fn of(name: &str, m: &[Vec<f64>]) -> Result<Shape, String> {
        let cols = m.first().map(Vec::len).unwrap_or(0);
        if cols == 0 || m.iter().any(|r| r.len() != cols) {
            return Err(format!("{} must be non-empty with rows of one non-zero length", name));
        }
        Ok(Shape { rows: m.len(), cols })
    }
}

trait Dot {
    fn dot(&self, other: &Self) -> f64;
}

impl Dot for [f64] {
    fn dot(&self, other: &Self) -> f64 {
        self.iter().zip(other).map(|(a, b)| a * b).sum()
    }
}

fn rows<'a>(m: &'a [Vec<f64>]) -> impl Iterator<Item = &'a [f64]> + 'a {
    m.iter().map(|r| r.as_slice())
}

fn scaled_dot_product_attention(
    q: &[Vec<f64>],
    k: &[Vec<f64>],
    v: &[Vec<f64>],
) -> Result<Vec<Vec<f64>>, String> {
    let (sq, sk, sv) = (Shape::of("Q", q)?, Shape::of("K", k)?, Shape::of("V", v)?);
    if sq.cols != sk.cols || sk.rows != sv.rows {
        return Err(format!("shapes do not fit: {:?} {:?} {:?}", sq, sk, sv));
    }
    let scale = 1.0 / (sq.cols as f64).sqrt();
    let one = |qi: &[f64]| -> Result<Vec<f64>, String> {
        let scores: Vec<f64> = rows(k).map(|kj| qi.dot(kj) * scale).collect();
        let w = softmax(&scores)?;
        Ok((0..sv.cols).map(|c| w.iter().zip(rows(v)).map(|(wj, vj)| wj * vj[c]).sum()).collect())
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = rows(q).map(|qi| s.spawn(move || one(qi))).collect();
        handles.into_iter().map(|h| h.join().map_err(|_| "a thread panicked".to_string())?).collect()
    })
}
