"""ALiBi slopes against values written out by hand (powers of two and the reference rule for other head counts),
the bias against explicit loops, and ALiBi attention through torch's float-mask attention."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from tformer.functional import scaled_dot_product_attention
from tformer.masks import causal_mask
from tformer.variants.alibi import alibi_bias, alibi_slopes

HAND = {
    1: [1 / 256],
    2: [1 / 16, 1 / 256],
    3: [1 / 16, 1 / 256, 1 / 4],  # 3 = 2 + 1: the two slopes of 2 heads, then the first of 4 heads
    4: [1 / 4, 1 / 16, 1 / 64, 1 / 256],
    # 6 = 4 + 2: the four slopes of 4 heads, then slopes 1 and 3 of 8 heads (1/2, 1/4, 1/8, … : every other)
    6: [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8],
    8: [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256],
    # 12 = 8 + 4: the eight slopes of 8 heads, then slopes 1, 3, 5, 7 of 16 heads (2^-0.5, 2^-1, 2^-1.5, …)
    12: [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256, 2**-0.5, 2**-1.5, 2**-2.5, 2**-3.5],
}


@pytest.mark.parametrize("num_heads", sorted(HAND))
def test_alibi_slopes_by_hand(num_heads: int) -> None:
    slopes = alibi_slopes(num_heads, dtype=torch.float64)
    assert slopes.shape == (num_heads,) and slopes.dtype == torch.float64
    assert_close(slopes, torch.tensor(HAND[num_heads], dtype=torch.float64), atol=1e-15, rtol=0.0)
    assert alibi_slopes(num_heads).dtype == torch.float32


def test_power_of_two_slopes_are_geometric_and_the_naive_rule_is_wrong_elsewhere() -> None:
    for H in (2, 4, 8, 16, 32):  # start 2^(-8/H), ratio 2^(-8/H) (Press et al. 2022, §3)
        slopes = alibi_slopes(H, dtype=torch.float64)
        expected = torch.tensor([2.0 ** (-8.0 * h / H) for h in range(1, H + 1)], dtype=torch.float64)
        assert_close(slopes, expected, atol=1e-15, rtol=0.0)
        assert_close(slopes[1:] / slopes[:-1], torch.full((H - 1,), slopes[0].item(), dtype=torch.float64))
    naive = torch.tensor([2.0 ** (-8.0 * h / 6) for h in range(1, 7)], dtype=torch.float64)
    assert not torch.allclose(alibi_slopes(6, dtype=torch.float64).sort().values, naive.sort().values)


@pytest.mark.parametrize(("H", "L", "S"), [(4, 5, 5), (6, 3, 7), (2, 1, 6), (3, 0, 4)])
def test_alibi_bias_against_loops(H: int, L: int, S: int) -> None:
    bias = alibi_bias(H, L, S, dtype=torch.float64)
    assert bias.shape == (H, L, S) and bias.dtype == torch.float64
    slopes = HAND[H]
    expected = torch.zeros(H, L, S, dtype=torch.float64)
    for h in range(H):
        for i in range(L):
            position = S - L + i  # bottom-right aligned, like causal_mask
            for j in range(position + 1):  # keys ahead stay 0: the causal mask hides them
                expected[h, i, j] = -slopes[h] * (position - j)
    assert_close(bias, expected, atol=1e-15, rtol=0.0)


def test_alibi_bias_is_aligned_like_the_causal_mask() -> None:
    full = alibi_bias(8, 9, dtype=torch.float64)  # (H, S, S)
    for L in (1, 4, 9):  # the last L rows of the square bias: cached decoding sees the same numbers
        assert torch.equal(alibi_bias(8, L, 9, dtype=torch.float64), full[:, -L:])
    assert torch.equal(full[0] < 0, causal_mask(9, 9).tril(-1))  # negative strictly in the past, 0 on the diagonal


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_alibi_attention_through_a_float_mask(dtype: torch.dtype) -> None:
    """tformer's scaled_dot_product_attention takes bool masks only; torch's takes a float additive mask, so
    ALiBi plugs into torch's as bias + (-inf where the causal mask forbids). Reference: the softmax written out."""
    torch.manual_seed(0)
    B, H, L, S, Dh = 2, 6, 3, 7, 8
    q, k, v = (torch.randn(B, H, n, Dh, dtype=dtype) for n in (L, S, S))
    bias = alibi_bias(H, L, S, dtype=dtype)  # (H, L, S)
    allowed = causal_mask(L, S)  # (L, S)
    additive = bias.masked_fill(~allowed, float("-inf"))  # (H, L, S)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=additive)
    scores = q @ k.transpose(-2, -1) / math.sqrt(Dh)  # (B, H, L, S)
    expected = torch.softmax(scores + bias - torch.where(allowed, 0.0, math.inf), dim=-1) @ v
    tol = {"atol": 1e-12, "rtol": 1e-12} if dtype == torch.float64 else {"atol": 1e-6, "rtol": 1e-6}
    assert_close(out, expected, **tol)
    # all slopes 0 would be plain causal attention: ALiBi changes the output
    plain, _ = scaled_dot_product_attention(q, k, v, mask=allowed)
    assert (out - plain).abs().max() > 1e-3
    # and tformer's own function refuses an additive mask rather than misreading it
    with pytest.raises(TypeError, match=r"mask: expected a bool tensor"):
        scaled_dot_product_attention(q, k, v, mask=additive)


def test_alibi_errors() -> None:
    with pytest.raises(ValueError, match=r"num_heads: expected a positive int, got 0"):
        alibi_slopes(0)
    with pytest.raises(TypeError, match=r"num_heads: expected an int, got float"):
        alibi_slopes(4.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"S: expected S >= L for a bottom-right aligned bias, got L=5, S=3"):
        alibi_bias(4, 5, 3)
    with pytest.raises(ValueError, match=r"L: expected a non-negative int, got -1"):
        alibi_bias(4, -1)


def test_integer_dtypes_are_refused_and_half_does_not_overflow() -> None:  # breaker 12
    with pytest.raises(TypeError, match=r"dtype: expected a floating-point torch.dtype, got torch.int64"):
        alibi_slopes(4, dtype=torch.int64)  # used to round every slope to 0
    with pytest.raises(TypeError, match=r"dtype: expected a floating-point torch.dtype"):
        alibi_bias(4, 3, dtype=torch.int32)
    half = alibi_bias(1, 1, 70_000, dtype=torch.float16)  # the distance 69_999 used to become inf in float16
    assert half.dtype == torch.float16 and bool(half.isfinite().all())
    assert_close(half.float(), alibi_bias(1, 1, 70_000).half().float())
    assert torch.equal(alibi_bias(4, 5, 7), alibi_bias(4, 5, 7, dtype=torch.float32))
