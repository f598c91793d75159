"""The expected answers of the knowledge checks, one table for every exercise, and why
each answer is right.

They live here, in the hidden checks, and not in the notebooks' test cells: the source of a
test cell reaches the learner's kernel when the cell runs, where code the learner left
running could read an answer written in it. A test cell calls ``exNN.knowledge_check("kcN",
kcN_answer)``; the comparison is :func:`autograder.testing.check_answer`'s (strings without
case or surrounding spaces, counts exactly, other numbers to a relative 1e-3).

:data:`EXPLANATIONS` says, for each knowledge check, why its answer is right (the row of a
right answer shows it: ``Knowledge check 1: right — ...``) and the reasoning that leads to
it, without the answer, with the chapter section to read (the error of a wrong answer
ends with it).
"""

from __future__ import annotations

from typing import Any

from autograder.testing import CheckFailed, check_answer

ANSWERS: dict[str, dict[str, Any]] = {
    "ex01_python_attention": {
        "kc1": "b",
        "kc2": "b",
        "kc3": 0.75,
    },
    "ex02_numpy_attention": {
        "kc1": 10,
        "kc2": "a",
        "kc3": "b",
    },
    "ex03_scaling": {
        "kc1": "b",
        "kc2": "c",
        "kc3": 8.0,
    },
    "ex04_positional_encoding": {
        "kc1": 0.9646616199111993,
        "kc2": "b",
        "kc3": -0.4161468365471424,
    },
    "ex05_torch_attention": {
        "kc1": "b",
        "kc2": 1600,
        "kc3": 6,
    },
    "ex06_tiled_attention": {
        "kc1": 16,
        "kc2": 1.1536509221253468,
        "kc3": "b",
        "kc4": 1,
    },
    "ex07_transformer": {
        "kc1": 3152384,
        "kc2": "b",
        "kc3": "pre-norm",
        "kc4": 1 / 0.9,
    },
    "ex08_rust_attention": {
        "kc1": "b",
        "kc2": "a",
        "kc3": 96,
    },
}


# (why the answer is right, the reasoning that leads to it without giving it), per check.
EXPLANATIONS: dict[str, dict[str, tuple[str, str]]] = {
    "ex01_python_attention": {
        "kc1": ("the weights have one row per query and one column per key (entry i, j is the "
                "softmax over the keys of qᵢ · kⱼ / √dₖ): T_q × T_k.",
                "There is one weight for every pair of a query and a key, and dₖ is summed "
                "away in each dot product qᵢ · kⱼ: count the rows and the columns of Q Kᵀ "
                "(chapter 2, Queries, keys and values)."),
        "kc2": ("doubling the scores squares every ratio of two weights, exp(sᵢ − sⱼ), so the "
                "largest score takes more of the weight: a softmax at temperature 1/2.",
                "The ratio of two softmax weights is exp(sᵢ − sⱼ): see what doubling every "
                "score does to that ratio when sᵢ is the largest score (chapter 3, What the "
                "scale buys: a softmax that can still learn)."),
        "kc3": ("exp(0) = 1 and exp(ln 3) = 3, so the second key gets 3 / (1 + 3) = 0.75.",
                "softmax gives key j the weight exp(sⱼ) / Σᵢ exp(sᵢ), and exp(0) and "
                "exp(ln 3) are whole numbers (chapter 2, Softmax, and why it must be "
                "computed stably)."),
    },
    "ex02_numpy_attention": {
        "kc1": ("causal_mask(T) is True where key j ≤ query i, the diagonal and below: "
                "1 + 2 + 3 + 4 = 10 of the 16 entries.",
                "Query i may attend the keys 0 … i, itself included: add up how many keys "
                "each of the 4 queries may attend (chapter 5, The causal mask)."),
        "kc2": ("the batch dimensions (8, 2) and (2,) broadcast to (8, 2), dₖ = 16 is summed "
                "away in Q Kᵀ, and the last two dimensions are the 5 queries and 7 keys: "
                "(8, 2, 5, 7).",
                "The leading (batch) dimensions of Q and K broadcast against each other, dₖ "
                "is summed away in Q Kᵀ, and the last two dimensions are one per query and "
                "one per key (chapter 5, From one sequence to a batch)."),
        "kc3": ("the fill −10⁴ is about 10⁴ above the allowed scores (about −2 × 10⁴), and "
                "softmax depends only on differences, so the masked keys take almost all the "
                "weight; −∞ can never exceed a real score.",
                "softmax depends only on the differences between scores: compare the fill "
                "value −10⁴ with the allowed scores of about −2 × 10⁴ and see which are the "
                "largest (chapter 5, The causal mask, on a finite stand-in for −∞)."),
    },
    "ex03_scaling": {
        "kc1": ("each product qᵢ kᵢ has mean 0 and variance E[qᵢ²] E[kᵢ²] = σ² · σ² = σ⁴, "
                "and the variances of the dₖ independent terms add: dₖ σ⁴.",
                "Find the variance of one product qᵢ kᵢ of two independent zero-mean "
                "components, E[qᵢ²] E[kᵢ²], then add the variances of the dₖ independent "
                "terms (chapter 3, The mean and variance of a dot product)."),
        "kc2": ("Var(q · k) = dₖ σ⁴, so its standard deviation is σ² √dₖ; multiplying by "
                "1/(σ² √dₖ) divides the variance by σ⁴ dₖ and leaves 1.",
                "Multiplying by c multiplies the variance by c²: take Var(q · k) for "
                "components of variance σ² (Q1) and choose the c with c² Var(q · k) = 1 "
                "(chapter 3, The mean and variance of a dot product)."),
        "kc3": ("for standard normal components Var(q · k) = dₖ = 64, and the standard "
                "deviation is its square root, √64 = 8.",
                "For independent standard normal components Var(q · k) = dₖ, and the "
                "standard deviation is the square root of the variance (chapter 3, The mean "
                "and variance of a dot product)."),
    },
    "ex04_positional_encoding": {
        "kc1": ("channels 2i and 2i + 1 turn with ωᵢ = 10000^(−2i/d_model), so "
                "ω₁ = 10000^(−2/512) ≈ 0.96466.",
                "Channels 2i and 2i + 1 share the angular frequency "
                "ωᵢ = base^(−2i/d_model): put i = 1, d_model = 512 and base = 10000 into it "
                "(chapter 4, The encoding)."),
        "kc2": ("Mₖ rotates each channel pair by the angle kωᵢ and M₋ₖ by −kωᵢ, which undoes "
                "it; the inverse of a rotation matrix is its transpose: M₋ₖ = Mₖᵀ.",
                "Mₖ rotates each channel pair by kωᵢ: ask what a rotation by the opposite "
                "angle does to it, and what the inverse of a rotation matrix is (chapter 4, "
                "A shift in position is a rotation)."),
        "kc3": ("with one pair PE(t) = (sin t, cos t), so PE(5) · PE(7) = sin 5 sin 7 + "
                "cos 5 cos 7 = cos(7 − 5) = cos 2 ≈ −0.41615.",
                "With one channel pair PE(t) = (sin t, cos t): expand the dot product and use "
                "cos(a − b) = cos a cos b + sin a sin b (chapter 4, Dot products see only the "
                "offset)."),
    },
    "ex05_torch_attention": {
        "kc1": ("a mask broadcasts from the last dimension: (B, 1, 1, S) puts the sequence "
                "on B and the key flags on S, and its size-1 dimensions repeat them over "
                "every head and every query.",
                "Broadcasting lines shapes up from the last dimension, and a size-1 "
                "dimension repeats: for each option, see which dimensions of "
                "(B, num_heads, L, S) its B and its S land on (chapter 5, Padding masks, and "
                "a query with nothing to attend to)."),
        "kc2": ("each of the B × num_heads = 2 × 8 (sequence, head) pairs has its own "
                "L × S = 10 × 10 matrix of weights: 2 × 8 × 10 × 10 = 1600; d_model sets "
                "the width of a head, not the number of weights.",
                "Each head of each sequence computes its own L × S matrix of weights: "
                "multiply by the number of sequences and of heads (d_model sets the width of "
                "a head, not the number of weights) (chapter 5, Multi-head attention)."),
        "kc3": ("is_causal aligns its triangle to the top-left corner: query i may attend "
                "keys 0 … i, so 1 + 2 + 3 = 6 pairs, and keys 3 and 4 are attended by no "
                "query.",
                "PyTorch's is_causal aligns its triangle to the top-left corner: query i may "
                "attend keys 0 … i whatever S is; add up the counts of the three queries "
                "(chapter 5, is_causal when queries and keys differ in number)."),
    },
    "ex06_tiled_attention": {
        "kc1": ("2048 × 2048 scores × 4 bytes = 16 777 216 bytes = 16 × 2²⁰ bytes: 16 MiB.",
                "Count the scores, T_q × T_k, multiply by the 4 bytes of a float32 and divide "
                "by 2²⁰ (chapter 6, The memory of the score matrix)."),
        "kc2": ("the second block raises the maximum to 5, so the old ℓ is rescaled by "
                "exp(3 − 5) and the new score adds exp(5 − 5): ℓ = exp(−4) + exp(−2) + 1 "
                "≈ 1.15365.",
                "When a block raises the running maximum from m to m′, the running sum is "
                "multiplied by exp(m − m′) before the block's own terms exp(s − m′) are added "
                "(chapter 6, The online softmax)."),
        "kc3": ("each query still meets each key once, so the products are those of dense "
                "attention (2 T_q T_k (d_k + d_v) operations) plus a little rescaling: tiling "
                "changes what is kept in memory, not the arithmetic.",
                "Count the query–key products and the weighted sums of values both ways: does "
                "tiling skip or repeat any of them? (chapter 6, Tiled attention in NumPy)."),
        "kc4": ("with a top-left causal mask query i sees keys 0 … i, so the 3 queries see "
                "keys 0, 1 and 2 only, all in the first block (keys 0–3); the blocks of keys "
                "4–7 and 8–9 are wholly masked.",
                "With a top-left causal mask query i may attend keys 0 … i: find the last key "
                "any of the 3 queries may attend, then count the blocks of 4 keys that hold "
                "a key up to it (chapter 5, is_causal when queries and keys differ in "
                "number; chapter 6, Masked keys and the −∞ bookkeeping)."),
    },
    "ex07_transformer": {
        "kc1": ("the 4 attention projections have 4 × (512 × 512 + 512) = 1 050 624 "
                "parameters, the FFN 512 × 2048 + 2048 + 2048 × 512 + 512 = 2 099 712 and "
                "the two LayerNorms 2 × 2 × 512 = 2048: 3 152 384 in all.",
                "Add the four attention projections (Q, K, V and output: d_model × d_model "
                "weights and d_model biases each), the FFN's two layers (d_model × d_ff "
                "+ d_ff and d_ff × d_model + d_model) and two LayerNorms (a scale and a shift "
                "of d_model each) (chapter 7, Counting parameters)."),
        "kc2": ("without the mask position t attends to token t + 1, the very token it must "
                "predict, so training learns to copy it; when generating, that token does "
                "not exist yet.",
                "Ask what each position can read in training when nothing is masked, and "
                "whether it is still there when the model generates one token at a time "
                "(chapter 5, The causal mask; chapter 7, The decoder block)."),
        "kc3": ("pre-norm adds each sublayer's output to a residual stream that is never "
                "normalised (x + f(LN(x))), so the stack needs one more LayerNorm after its "
                "last block; post-norm's blocks end with LN(x + f(x)) already.",
                "Write out where the LayerNorm sits in each arrangement, LN(x + f(x)) or "
                "x + f(LN(x)), and ask whether the last block's output has passed through a "
                "LayerNorm (chapter 7, the section comparing the two arrangements)."),
        "kc4": ("an element is kept with probability 1 − p = 0.9 and multiplied by "
                "1/(1 − p) = 1/0.9 ≈ 1.111, so its expected output 0.9 × x / 0.9 = x is the "
                "input, and eval mode can pass x through.",
                "An element is kept with probability 1 − p and multiplied by some factor c: "
                "choose c so that the expected output, (1 − p) · c · x, equals x (chapter 7, "
                "Dropout, and why it is off in eval mode)."),
    },
    "ex08_rust_attention": {
        "kc1": ("f64 arithmetic follows IEEE 754 and never panics: exp(-1000) is below the "
                "smallest f64 (about 4.9e-324, exp(-744.4)) and rounds to 0.0, so the sum is "
                "0.0 and 0.0 / 0.0 is NaN: Ok with NaN weights, as for [1000, 1001].",
                "Rust's f64 follows IEEE 754, as NumPy's floats do: an exp too small for f64 "
                "does not panic; work out what exp(-1000) is in f64 (the smallest positive "
                "f64 is about 4.9e-324) and what the ratio of two such values is (chapter 2, "
                "Softmax, and why it must be computed stably)."),
        "kc2": ("&[f64] is a shared borrow: softmax reads scores through a reference that "
                "ends when it returns, and the caller, who still owns scores, can read it; "
                "reading needs no mut.",
                "The & in &[f64] means softmax receives a reference while the caller keeps "
                "ownership: ask what the owner may do once the borrow has ended, and whether "
                "reading needs mut (chapter 2, The same in Rust)."),
        "kc3": ("each of the T_q × T_k = 3 × 4 = 12 scores is a dot product of dₖ = 8 "
                "multiplications: 3 × 4 × 8 = 96.",
                "Each score qᵢ · kⱼ takes dₖ multiplications, and there is one score for "
                "every (query, key) pair (chapter 2, Queries, keys and values)."),
    },
}


def explanations(assignment: str) -> dict[str, str]:
    """kc name ("kc1", ...) -> why its answer is right, for the rows of ``assignment``'s
    right answers ({} for an assignment without knowledge checks)."""
    return {name: right for name, (right, _) in EXPLANATIONS.get(assignment, {}).items()}


def check(assignment: str, name: str, answer: Any) -> None:
    """Knowledge check ``name`` ("kc1", "kc2", ...) of ``assignment``: ``answer`` against
    its expected answer. Raises CheckFailed (wrong or missing answer: its message ends with
    the reasoning that leads to the answer, never the answer) or KeyError (no such
    knowledge check: an author's mistake)."""
    expected = ANSWERS[assignment][name]
    try:
        check_answer(answer, expected, f"Knowledge check {name.removeprefix('kc')}")
    except CheckFailed as exc:
        raise CheckFailed(f"{exc}. {EXPLANATIONS[assignment][name][1]}") from None


def check_for(assignment: str, module: str):
    """The ``knowledge_check(name, answer)`` check of ``assignment``, as a function of the
    checks module ``module`` (the notebooks call ``exNN.knowledge_check("kcN", kcN_answer)``)."""
    def knowledge_check(name: str, answer: Any) -> None:
        check(assignment, name, answer)

    knowledge_check.__module__ = module
    knowledge_check.__doc__ = (f"Knowledge check ``name`` (\"kc1\", ...) of {assignment}: "
                               "``answer`` against the expected answer, which is kept in "
                               ":mod:`autograder.checks.knowledge`, never in a notebook cell.")
    return knowledge_check

