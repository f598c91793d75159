"""Sinusoidal positional encodings and their shift matrices (reference for ``ex04``).

The reference for ``ex04_positional_encoding``. Vaswani et al. (2017), section 3.5:

    PE(pos, 2i)     = sin(pos * w_i)
    PE(pos, 2i + 1) = cos(pos * w_i),    w_i = base^(-2i / d_model),  base = 10000,

so channels (2i, 2i + 1) hold the point (sin, cos) of angle pos * w_i on the unit circle.
Moving k positions turns every such point by the angle k * w_i, whatever pos is: that is
the block-diagonal rotation :func:`relative_shift_matrix`, with PE[pos + k] = M_k @ PE[pos]
for the one-dimensional array PE[pos] (for the row PE(pos) of chapter 4, which writes the
offset as Delta: PE(pos + Delta) = PE(pos) M_Delta^T).
:func:`apply_rotary` is the descendant of this idea, rotary position embedding (RoPE,
Su et al. 2021), which rotates queries and keys instead of adding a vector to the input.
"""

from __future__ import annotations

import numbers

import numpy as np


def _int(name: str, value, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {name} = {value}")
    return int(value)


def _even_d_model(d_model) -> int:
    d_model = _int("d_model", d_model, 2)
    if d_model % 2:
        raise ValueError(
            f"d_model must be even (channels come in sin/cos pairs), got d_model = {d_model}")
    return d_model


def _base(base) -> float:
    if isinstance(base, bool) or not isinstance(base, numbers.Real) or not base > 0:
        raise ValueError(f"base must be a positive number, got base = {base!r}")
    return float(base)


def frequencies(d_model: int, base: float = 10000.0) -> np.ndarray:
    """The angular frequencies w_i = base^(-2i / d_model), i = 0, ..., d_model/2 - 1.

    Returns a float64 array of shape (d_model // 2,), from w_0 = 1 down to
    base^(-(d_model - 2) / d_model). Raises ValueError for an odd or non-positive
    ``d_model`` or a non-positive ``base``.
    """
    d_model, base = _even_d_model(d_model), _base(base)
    i = np.arange(d_model // 2, dtype=np.float64)
    return base ** (-2.0 * i / d_model)


def sinusoidal_positional_encoding(T: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The sinusoidal positional encodings of positions 0, ..., T - 1 (Vaswani et al. 2017, 3.5).

    Args:
        T: the number of positions, an integer >= 0.
        d_model: the model width, a positive even integer.
        base: the base of the geometric sequence of wavelengths (10000 in the paper).

    Returns:
        PE, float64 of shape (T, d_model): PE[pos, 2i] = sin(pos w_i) and
        PE[pos, 2i + 1] = cos(pos w_i) with w_i = base^(-2i / d_model) (sin on even
        channels, cos on odd channels, interleaved).

    Raises:
        ValueError: if ``d_model`` is odd or < 2, ``T`` is negative, or ``base`` <= 0.
    """
    T = _int("T", T, 0)
    w = frequencies(d_model, base)
    angles = np.arange(T, dtype=np.float64)[:, None] * w[None, :]  # (T, d_model // 2)
    pe = np.empty((T, 2 * w.size), dtype=np.float64)
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe


def rotation_blocks(angles: np.ndarray) -> np.ndarray:
    """2 x 2 matrices [[cos a, sin a], [-sin a, cos a]], one per angle: shape (..., 2, 2).

    Each maps (sin x, cos x) to (sin(x + a), cos(x + a)), by the angle-addition formulas.
    """
    c, s = np.cos(angles), np.sin(angles)
    return np.stack([np.stack([c, s], axis=-1), np.stack([-s, c], axis=-1)], axis=-2)


def relative_shift_matrix(k: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The matrix M_k with PE[pos + k] = M_k @ PE[pos] for every position pos.

    (``PE[pos]`` is a one-dimensional array, so this is ``PE[pos] @ M_k.T``: chapter 4's
    PE(pos + Delta) = PE(pos) M_Delta^T, with the offset k written Delta.)

    M_k is block diagonal: block i (rows and columns 2i, 2i + 1) is the rotation
    [[cos(k w_i), sin(k w_i)], [-sin(k w_i), cos(k w_i)]]. It depends on the offset k and
    not on pos; M_{-k} = M_k^T = M_k^{-1}.

    Args:
        k: the offset, any integer (negative k shifts towards earlier positions).
        d_model: the model width, a positive even integer.
        base: as in :func:`sinusoidal_positional_encoding`.

    Returns:
        float64 array of shape (d_model, d_model).

    Raises:
        ValueError: if ``k`` is not an integer, ``d_model`` is odd or < 2, or ``base`` <= 0.
    """
    k = _int("k", k)
    w = frequencies(d_model, base)
    blocks = rotation_blocks(k * w)  # (d_model // 2, 2, 2)
    M = np.zeros((d_model, d_model), dtype=np.float64)
    for i, block in enumerate(blocks):
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = block
    return M


def apply_rotary(x: np.ndarray, positions: np.ndarray, base: float = 10000.0) -> np.ndarray:
    """Rotary position embedding (RoPE, Su et al. 2021) of vectors x at the given positions.

    Channels (2i, 2i + 1) of the vector at position t are rotated by the angle t * omega_i,
    omega_i = base^(-2i / d_k), as a point (a, b) of the plane (a in channel 2i, b in channel
    2i + 1), counter-clockwise: (a, b) -> (a cos - b sin, a sin + b cos). For rows q and k (chapter 4), with R_t the
    rotation at position t acting on the right, (q R_t) . (k R_t') = q . (k R_{t' - t}):
    the score depends on the positions only through the offset t' - t.

    Args:
        x: float array of shape (..., T, d_k) with d_k even.
        positions: integer or float array of shape (T,), the position of each row.
        base: as in :func:`sinusoidal_positional_encoding`.

    Returns:
        float64 array of the shape of ``x``.

    Raises:
        ValueError: if d_k is odd or ``positions`` does not have shape (T,).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., T, d), got shape {x.shape}")
    positions = np.asarray(positions, dtype=np.float64)
    if positions.shape != x.shape[-2:-1]:
        raise ValueError(f"positions must have shape ({x.shape[-2]},), got {positions.shape}")
    w = frequencies(x.shape[-1], base)
    angles = positions[:, None] * w[None, :]  # (T, d / 2)
    c, s = np.cos(angles), np.sin(angles)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out
