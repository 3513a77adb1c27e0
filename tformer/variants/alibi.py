"""ALiBi: attention with linear biases instead of position embeddings (no chapter uses it yet).

Press et al. 2022, "Train Short, Test Long: Attention with Linear Biases Enables Input Length Extrapolation",
§3: no position is added to the embeddings; instead each head h adds ``-m_h · (i - j)`` to the score of query
i on key j (its distance into the past), so attention fades linearly with distance, at a different rate per
head. The slopes m_h form a geometric sequence that depends only on the number of heads H: for H a power of
two, m_h = 2^(-8h/H), h = 1 … H (8 heads: 1/2, 1/4, …, 1/256). For other H the authors' reference code
(ofirpress/attention_with_linear_biases, ``get_slopes``) takes the slopes of the closest smaller power of two
n, then every other slope of 2n, so the extra heads fall between the first ones:
6 heads → [1/4, 1/16, 1/64, 1/256, 1/2, 1/8]. The naive 2^(-8h/6) is a different set.

The bias is additive and float. :func:`tformer.functional.scaled_dot_product_attention` takes only boolean
masks (True = may attend), so ALiBi cannot be passed to it as a mask: a caller adds :func:`alibi_bias` to the
scores, or passes ``alibi_bias(...).masked_fill(~causal_mask(L, S), -inf)`` as the float ``attn_mask`` of
``torch.nn.functional.scaled_dot_product_attention`` (the tests check that this is ALiBi attention).

Dimension letters: H heads, L query length, S key length.
"""

from __future__ import annotations

import torch
from torch import Tensor

from tformer._checks import check_int

__all__ = ["alibi_bias", "alibi_slopes"]


def _geometric_slopes(n: int) -> list[float]:
    """2^(-8h/n) for h = 1 … n (exact for the powers of two among them)."""
    return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]


def alibi_slopes(
    num_heads: int, *, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None
) -> Tensor:
    """The ALiBi slope m_h of every head (Press et al. 2022, §3; the reference code's rule for any H).

    H a power of two: m_h = 2^(-8h/H), h = 1 … H. Otherwise, with n the largest power of two below H: the n
    slopes of n heads, then the slopes of 2n heads at odd h (every other one, starting with the first), H − n of
    them. 4 heads → [1/4, 1/16, 1/64, 1/256]; 6 heads → [1/4, 1/16, 1/64, 1/256, 1/2, 1/8].

    Shape:
        output ``(H,)``, in ``dtype`` (default float32), on ``device``.

    Raises:
        TypeError: if ``num_heads`` is not an int, or ``dtype`` is not a floating-point dtype (slopes below 1
            would round to 0 in an integer dtype).
        ValueError: if ``num_heads < 1``.
    """
    H = check_int("num_heads", num_heads, 1)
    _check_float_dtype(dtype)
    n = 1 << (H.bit_length() - 1)  # the largest power of two ≤ H
    slopes = _geometric_slopes(n) + _geometric_slopes(2 * n)[0::2][: H - n]
    return torch.tensor(slopes, dtype=dtype, device=device)  # (H,)


def alibi_bias(
    num_heads: int,
    L: int,
    S: int | None = None,
    *,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> Tensor:
    """The additive ALiBi bias ``-m_h · (distance from query i back to key j)``, one ``(L, S)`` plane per head.

    Aligned like :func:`tformer.masks.causal_mask`: when ``S > L`` the L queries are the last L positions, so
    query i sits at position ``S - L + i`` and its bias on key j is ``-m_h · (S - L + i - j)``; with ``L = 1``
    (one new token during cached decoding) the row equals the last row of the full ``(S, S)`` bias. Future keys
    (``j > S - L + i``) get 0: the bias does not mask them, combine it with ``causal_mask(L, S)``.

    Press et al. 2022, §3: softmax(q_i Kᵀ + m · [-(i-1), …, -2, -1, 0]) (scores scaled by 1/√Dh as usual).

    Shape:
        output ``(H, L, S)``, in ``dtype``; add it to scores ``(B, H, L, S)`` (it broadcasts over B).

    The product is computed in float32 (float64 when ``dtype`` is float64) and cast to ``dtype`` once, so in
    float16 a long distance gives a large finite bias (or -inf only where the bias itself exceeds float16's
    range), not -inf from a distance that overflowed before the multiplication.

    Raises:
        TypeError: if ``num_heads``, ``L`` or ``S`` is not an int, or ``dtype`` is not a floating-point dtype.
        ValueError: if ``num_heads < 1``, ``L`` or ``S`` is negative, or ``S < L``.
    """
    compute = torch.promote_types(_check_float_dtype(dtype), torch.float32)
    slopes = alibi_slopes(num_heads, dtype=compute, device=device)  # (H,)
    L = check_int("L", L, 0)
    S = L if S is None else check_int("S", S, 0)
    if S < L:
        raise ValueError(f"S: expected S >= L for a bottom-right aligned bias, got L={L}, S={S}")
    query_pos = torch.arange(S - L, S, device=device)[:, None]  # (L, 1): positions of the queries
    key_pos = torch.arange(S, device=device)[None, :]  # (1, S)
    offset = (key_pos - query_pos).clamp(max=0).to(compute)  # (L, S): -(how far back each key is); 0 ahead
    return (slopes[:, None, None] * offset).to(dtype)  # (H, L, S)


def _check_float_dtype(dtype: object) -> torch.dtype:
    """Return ``dtype`` if it is a floating-point ``torch.dtype``; TypeError naming ``dtype`` otherwise."""
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype: expected a floating-point torch.dtype, got {dtype}")
    return dtype
