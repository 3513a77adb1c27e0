"""Tests for tformer.positional: the sinusoidal table, learned positions and RoPE."""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from tformer.positional import (
    LearnedPositionalEmbedding,
    RotaryEmbedding,
    SinusoidalPositionalEncoding,
    sinusoidal_positional_encoding,
)


def _pe_formula(pos: int, d_model: int) -> list[float]:
    """PE[pos, 2i] = sin(pos / 10000^(2i/D)), PE[pos, 2i+1] = cos(...), straight from §3.5."""
    row = []
    for c in range(d_model):
        two_i = c - c % 2
        angle = pos / 10000 ** (two_i / d_model)
        row.append(math.sin(angle) if c % 2 == 0 else math.cos(angle))
    return row


@pytest.mark.parametrize("d_model", [1, 4, 5, 8, 9])
def test_sinusoidal_table_matches_formula(d_model):
    pe = sinusoidal_positional_encoding(12, d_model, dtype=torch.float64)
    assert pe.shape == (12, d_model) and pe.dtype == torch.float64
    expected = torch.tensor([_pe_formula(p, d_model) for p in range(12)], dtype=torch.float64)
    assert_close(pe, expected, rtol=1e-12, atol=1e-12)


def test_sinusoidal_quoted_rows():
    # The figures quoted in the book are the table rounded to 4 decimals.
    pe4 = sinusoidal_positional_encoding(2, 4, dtype=torch.float64)
    pe5 = sinusoidal_positional_encoding(2, 5, dtype=torch.float64)
    quoted4 = torch.tensor([0.8415, 0.5403, 0.0100, 1.0000], dtype=torch.float64)
    quoted5 = torch.tensor([0.8415, 0.5403, 0.0251, 0.9997, 0.0006], dtype=torch.float64)
    assert_close(pe4[1].round(decimals=4), quoted4, rtol=0, atol=1e-12)
    assert_close(pe5[1].round(decimals=4), quoted5, rtol=0, atol=1e-12)
    pe5_32 = sinusoidal_positional_encoding(2, 5)
    assert pe5_32.dtype == torch.float32
    assert_close(pe5_32[1], torch.tensor(_pe_formula(1, 5)), rtol=1e-6, atol=1e-7)


def test_sinusoidal_module_adds_offset_rows_and_grows():
    module = SinusoidalPositionalEncoding(6, max_len=4)
    x = torch.randn(2, 3, 6, dtype=torch.float64)
    full = sinusoidal_positional_encoding(20, 6, dtype=torch.float64)
    assert_close(module(x), x + full[:3], rtol=1e-12, atol=1e-12)
    out = module(x, offset=9)  # needs rows 9..11, past the initial 4: the table grows
    assert_close(out, x + full[9:12], rtol=1e-12, atol=1e-12)
    assert module.pe.shape[0] >= 12
    assert "pe" not in module.state_dict()
    assert module(x.float()).dtype == torch.float32
    with pytest.raises(ValueError, match=r"x: expected shape \(\.\.\., L, D=6\), got \(2, 3, 5\)"):
        module(torch.randn(2, 3, 5))
    with pytest.raises(ValueError, match="offset: expected a non-negative int, got -1"):
        module(x, offset=-1)


def test_sinusoidal_module_dropout_only_in_train():
    module = SinusoidalPositionalEncoding(8, dropout=0.5).eval()
    x = torch.randn(2, 5, 8)
    assert_close(module(x), module(x), rtol=0, atol=0)
    module.train()
    assert (module(x) == 0).any()


def test_learned_embedding_offset_and_max_len_error():
    module = LearnedPositionalEmbedding(6, 4)
    x = torch.randn(2, 3, 4)
    assert_close(module(x, offset=2), x + module.embedding.weight[2:5], rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"x: expected positions offset \+ L <= max_len=6, got 4 \+ 3 = 7"):
        module(x, offset=4)
    with pytest.raises(ValueError, match=r"x: expected positions offset \+ L <= max_len=6, got 0 \+ 7 = 7"):
        module(torch.randn(1, 7, 4))


def _rope_reference(x: list[float], m: int, base: float = 10000.0) -> list[float]:
    """Half-split RoPE written as an explicit 2x2 rotation of each pair (j, j + Dh/2) with math.cos/sin."""
    d = len(x)
    half = d // 2
    out = [0.0] * d
    for j in range(half):
        angle = m * base ** (-2 * j / d)
        c, s = math.cos(angle), math.sin(angle)
        out[j] = c * x[j] - s * x[j + half]
        out[j + half] = s * x[j] + c * x[j + half]
    return out


def test_rope_fixed_values_at_positions_3_and_7():
    rope = RotaryEmbedding(4)
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [0.5, -1.0, 0.25, 2.0]], dtype=torch.float64)  # (L=2, Dh=4)
    out = rope(x, torch.tensor([3, 7]))
    expected = torch.tensor(
        [_rope_reference(x[0].tolist(), 3), _rope_reference(x[1].tolist(), 7)], dtype=torch.float64
    )
    assert_close(out, expected, rtol=1e-12, atol=1e-12)
    # Position 3, pair (0, 2) rotates by exactly 3 radians: [cos3·1 − sin3·3, …, sin3·1 + cos3·3, …].
    assert_close(out[0, 0].item(), math.cos(3) - 3 * math.sin(3), rtol=1e-12, atol=1e-12)
    assert_close(out[0, 2].item(), math.sin(3) + 3 * math.cos(3), rtol=1e-12, atol=1e-12)


def test_rope_position_zero_is_identity_and_shape_dtype_kept():
    rope = RotaryEmbedding(8)
    x = torch.randn(2, 3, 5, 8, dtype=torch.bfloat16)
    out = rope(x, torch.arange(5))
    assert out.shape == x.shape and out.dtype == x.dtype
    assert_close(out[..., 0, :], x[..., 0, :], rtol=0, atol=0)


def test_rope_relative_property_and_norm_preserved():
    g = torch.Generator().manual_seed(0)
    rope = RotaryEmbedding(16)
    q = torch.randn(16, generator=g)
    k = torch.randn(16, generator=g)
    positions = torch.arange(40)
    q_rot = rope(q.expand(40, 16), positions)  # (40, 16): q at every position m
    k_rot = rope(k.expand(40, 16), positions)  # (40, 16): k at every position n
    dots = q_rot @ k_rot.T  # (m, n)
    for offset in (-5, 0, 3, 17):
        diagonal = torch.diagonal(dots, offset=offset)  # all pairs with n - m = offset
        assert (diagonal - diagonal[0]).abs().max() <= 1e-5
    assert_close(q_rot.norm(dim=-1), q.norm().expand(40), rtol=1e-6, atol=1e-6)


def test_rope_positions_past_max_len_are_exact_and_nothing_is_saved():
    rope = RotaryEmbedding(4, max_len=2)
    x = torch.randn(3, 4, dtype=torch.float64)
    out = rope(x, torch.tensor([0, 50, 100]))  # no table to outgrow: cos/sin come from the positions
    rows = [_rope_reference(r, m) for r, m in zip(x.tolist(), (0, 50, 100), strict=True)]
    assert_close(out, torch.tensor(rows, dtype=torch.float64), rtol=1e-10, atol=1e-10)
    assert rope.state_dict() == {}


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: RotaryEmbedding(5), ValueError, r"head_dim: expected an even number \(RoPE rotates pairs of features\), got 5"),
        (lambda: RotaryEmbedding(4)(torch.randn(3, 4), torch.tensor([0.0, 1.0, 2.0])), TypeError,
         r"positions: expected an integer tensor \(L,\), got torch.float32"),
        (lambda: RotaryEmbedding(4)(torch.randn(3, 4), torch.tensor([0, 1])), ValueError,
         r"positions: expected shape \(L=3,\), got \(2,\)"),
        (lambda: RotaryEmbedding(4)(torch.randn(2, 6), torch.tensor([0, 1])), ValueError,
         r"x: expected shape \(\.\.\., L, Dh=4\), got \(2, 6\)"),
        (lambda: RotaryEmbedding(4)(torch.ones(2, 4, dtype=torch.long), torch.tensor([0, 1])), TypeError,
         r"x: expected a floating-point tensor \(\.\.\., L, Dh\), got torch.int64"),
        (lambda: sinusoidal_positional_encoding(4, 0), ValueError, "d_model: expected a positive int"),
    ],
)
def test_positional_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- regressions found by the hostile review ---------------------------------------------------------------


def test_rope_negative_positions_rotate_back() -> None:
    # RoPE is a rotation by m·θ for every integer m: position -m undoes position m
    rope = RotaryEmbedding(8)
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    m = torch.tensor([0, 3, 7, 100, 2048])
    assert_close(rope(rope(x, m), -m), x, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(rope(x, m), x)


def test_sinusoidal_table_rejects_an_integer_dtype() -> None:
    # torch.long used to round every value in [-1, 1] to 0 or ±1, silently
    with pytest.raises(TypeError, match=r"dtype: expected a floating-point torch.dtype"):
        sinusoidal_positional_encoding(3, 4, dtype=torch.long)


def test_rope_base_must_be_a_number() -> None:
    with pytest.raises(TypeError, match=r"base: expected a number, got str"):
        RotaryEmbedding(8, base="1e4")  # type: ignore[arg-type]


def test_learned_positions_keep_the_input_dtype() -> None:
    pos = LearnedPositionalEmbedding(4, 8)  # float32 table
    x = torch.randn(2, 3, 8, dtype=torch.float16)
    out = pos(x)
    assert out.dtype == torch.float16  # as SinusoidalPositionalEncoding; it used to promote to float32
    assert_close(out, x + pos.embedding.weight[:3].half(), atol=0.0, rtol=0.0)
