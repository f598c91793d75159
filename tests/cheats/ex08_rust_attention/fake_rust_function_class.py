"""Cheat (issue 23, a fake compiled function): the Rust cells are the released stubs
(``todo!()``), and the kc1 cell binds ``softmax`` and ``scaled_dot_product_attention`` to
a Python class named ``RustFunction`` whose ``__module__`` is ``autograder.rust``, holding a
real ctypes function pointer as ``_fn`` and no Rust sources. The checks used to recognise
a Rust function by exactly those (name, module, a ctypes pointer) and read its sources for
banned words: this one computed in Python and passed them all.

Now the checker never looks at the kernel's objects of those names: it calls the program
the grader built from the ``%%rust`` solution cells, which are stubs, so every Rust test
fails (NotImplementedError); the three knowledge checks keep their points (3 of 14).

status: graded
fails: test_softmax_known_values, test_softmax_stable, test_softmax_empty, test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_safe_std_only
"""
# %% softmax
%%rust
/// Numerically stable softmax of a non-empty row of scores.
///
/// Returns a new Vec of weights that sum to 1; Err for an empty row.
fn softmax(row: &[f64]) -> Result<Vec<f64>, String> {
    // YOUR CODE HERE
    todo!()
}
# %% scaled_dot_product_attention
%%rust
/// Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V on row-major matrices.
///
/// q: T_q x d_k, k: T_k x d_k, v: T_k x d_v -> T_q x d_v.
/// Err for empty, ragged or mismatched inputs.
fn scaled_dot_product_attention(
    q: &[Vec<f64>],
    k: &[Vec<f64>],
    v: &[Vec<f64>],
) -> Result<Vec<Vec<f64>>, String> {
    // YOUR CODE HERE
    todo!()
}
# %% kc1
import ctypes
import math


class RustFunction:
    """Looks like autograder.rust.RustFunction to a check that reads names."""

    __module__ = "autograder.rust"

    def __init__(self, name, python):
        self.__name__ = self.__qualname__ = name
        self._fn = ctypes.CDLL(None).abs  # a real ctypes function pointer
        self.rust_sources = ()
        self.signature = name
        self._python = python

    def __call__(self, *args):
        return self._python(*args)


def _softmax(row):
    if not row:
        raise ValueError("softmax of an empty row")
    m = max(row)
    e = [math.exp(x - m) for x in row]
    return [x / sum(e) for x in e]


def _attention(Q, K, V):
    for name, M in (("Q", Q), ("K", K), ("V", V)):
        if not M or any(not r or len(r) != len(M[0]) for r in M):
            raise ValueError(f"{name} is empty or ragged")
    if len(Q[0]) != len(K[0]) or len(K) != len(V):
        raise ValueError("Q, K and V do not fit together")
    s = 1 / math.sqrt(len(Q[0]))
    out = []
    for q in Q:
        w = _softmax([sum(a * b for a, b in zip(q, k)) * s for k in K])
        out.append([sum(wj * v[c] for wj, v in zip(w, V)) for c in range(len(V[0]))])
    return out


softmax = RustFunction("softmax", _softmax)
scaled_dot_product_attention = RustFunction("scaled_dot_product_attention", _attention)
kc1_answer = "b"
