"""Cheat (issue 23, a fake compiled function over a real one): ``softmax`` is real Rust,
the attention cell is the released stub, and the kc1 cell binds
``scaled_dot_product_attention`` to a subclass of the kernel's own ``RustFunction`` (so
its type is named and moduled as the real one) that carries the real softmax's ctypes
pointer, library and Rust sources but computes attention in Python. To a check that
judged the object it was given, it was indistinguishable from compiled Rust.

Now the checker calls the program the grader built from the ``%%rust`` solution cells:
its softmax is the learner's real Rust (3 points) and its attention the stub, so the
attention tests and the safe-std test (which calls both) fail; the knowledge checks keep
their points (6 of 14).

status: graded
fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_safe_std_only
"""
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
import math

_Real = type(softmax)  # the kernel's autograder.rust.RustFunction


class RustFunction(_Real):
    __module__ = _Real.__module__

    def __init__(self, real):
        self.__dict__.update(real.__dict__)  # its _fn, library, sources
        self.__name__ = self.__qualname__ = "scaled_dot_product_attention"
        self.signature = "fn scaled_dot_product_attention(q: &[Vec<f64>], k: &[Vec<f64>], " \
                         "v: &[Vec<f64>]) -> Result<Vec<Vec<f64>>, String>"

    def __call__(self, Q, K, V):
        for name, M in (("Q", Q), ("K", K), ("V", V)):
            if not M or any(not r or len(r) != len(M[0]) for r in M):
                raise ValueError(f"{name} is empty or ragged")
        if len(Q[0]) != len(K[0]) or len(K) != len(V):
            raise ValueError("Q, K and V do not fit together")
        s = 1 / math.sqrt(len(Q[0]))
        out = []
        for q in Q:
            w = softmax([sum(a * b for a, b in zip(q, k)) * s for k in K])
            out.append([sum(wj * v[c] for wj, v in zip(w, V)) for c in range(len(V[0]))])
        return out


scaled_dot_product_attention = RustFunction(softmax)
kc1_answer = "b"
