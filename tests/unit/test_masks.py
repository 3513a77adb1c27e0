"""Tests for tformer.masks: causal alignment, padding masks, and the one broadcasting helper."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from tformer.functional import scaled_dot_product_attention
from tformer.masks import (
    as_key_padding,
    attention_mask_for_heads,
    causal_mask,
    padding_mask,
    padding_mask_from_tokens,
)


def test_causal_square_is_lower_triangular():
    expected = torch.tensor([[i >= j for j in range(4)] for i in range(4)])
    assert torch.equal(causal_mask(4), expected)
    assert causal_mask(4).dtype == torch.bool


@pytest.mark.parametrize(("L", "S"), [(1, 5), (2, 5), (3, 3), (4, 6)])
def test_causal_bottom_right_alignment(L, S):
    # Query i sits at position S - L + i and sees keys 0 .. S - L + i.
    expected = torch.tensor([[j <= S - L + i for j in range(S)] for i in range(L)])
    assert torch.equal(causal_mask(L, S), expected)
    assert torch.equal(causal_mask(L, S), torch.ones(S, S, dtype=torch.bool).tril()[S - L :])


def test_causal_matches_torch_lower_right_bias():
    from torch.nn.attention.bias import causal_lower_right

    q, k, v = torch.randn(1, 1, 3, 4, dtype=torch.float64), *torch.randn(2, 1, 1, 6, 4, dtype=torch.float64)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(3, 6))
    out, _ = scaled_dot_product_attention(q, k, v, causal_mask(3, 6))
    assert_close(out, ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [((3, 2), ValueError, r"S: expected S >= L.*L=3, S=2"), ((-1,), ValueError, "L: expected a non-negative"),
     ((2.0,), TypeError, "L: expected an int")],
)
def test_causal_errors(args, error, match):
    with pytest.raises(error, match=match):
        causal_mask(*args)


@pytest.mark.parametrize("lengths", [[3, 1, 0, 4], torch.tensor([3, 1, 0, 4])])
def test_padding_mask(lengths):
    expected = torch.tensor(
        [[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]], dtype=torch.bool
    )
    assert torch.equal(padding_mask(lengths, 4), expected)


@pytest.mark.parametrize(
    ("lengths", "error", "match"),
    [
        ([2, 5], ValueError, r"lengths: expected every length in \[0, S=4\], got \[2, 5\]"),
        ([2, -1], ValueError, r"lengths: expected every length in \[0, S=4\]"),
        (torch.tensor([[1, 2]]), ValueError, r"lengths: expected shape \(B,\)"),
        (torch.tensor([1.0, 2.0]), TypeError, r"lengths: expected an integer tensor \(B,\), got torch.float32"),
        ([1.5, 2], TypeError, "lengths: expected an int, got float"),
    ],
)
def test_padding_mask_errors(lengths, error, match):
    with pytest.raises(error, match=match):
        padding_mask(lengths, 4)


def test_padding_mask_from_tokens_and_as_key_padding():
    tokens = torch.tensor([[5, 6, 0, 0], [7, 0, 8, 0]])
    mask = padding_mask_from_tokens(tokens, pad_id=0)
    assert torch.equal(mask, torch.tensor([[1, 1, 0, 0], [1, 0, 1, 0]], dtype=torch.bool))
    assert as_key_padding(mask).shape == (2, 1, 1, 4)
    with pytest.raises(TypeError, match=r"tokens: expected an integer tensor \(B, S\), got torch.float32"):
        padding_mask_from_tokens(tokens.float(), 0)
    with pytest.raises(ValueError, match=r"tokens: expected shape \(B, S\)"):
        padding_mask_from_tokens(tokens[0], 0)
    with pytest.raises(ValueError, match=r"mask: expected shape \(B, S\), got \(4,\)"):
        as_key_padding(mask[0])


def test_padded_keys_do_not_change_outputs():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4, generator=g, dtype=torch.float64) for _ in range(3))
    mask = attention_mask_for_heads(as_key_padding(padding_mask([5, 3], 5)), 2, 3, 5, 5)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    k2, v2 = k.clone(), v.clone()
    k2[1, :, 3:] = 100.0  # change only the padded keys/values of sequence 1
    v2[1, :, 3:] = -7.0
    out2, _ = scaled_dot_product_attention(q, k2, v2, mask)
    assert_close(out2, out, rtol=1e-12, atol=1e-12)


B, H, L, S = 2, 3, 4, 5


@pytest.mark.parametrize(
    ("shape", "expected_shape"),
    [
        ((L, S), (1, 1, L, S)),
        ((1, S), (1, 1, 1, S)),
        ((B, L, S), (B, 1, L, S)),
        ((B, 1, 1, S), (B, 1, 1, S)),
        ((B, 1, L, S), (B, 1, L, S)),
        ((B, H, L, S), (B, H, L, S)),
    ],
)
def test_attention_mask_for_heads_shapes(shape, expected_shape):
    mask = torch.rand(shape) > 0.5
    out = attention_mask_for_heads(mask, B, H, L, S)
    assert out.shape == expected_shape
    full = out.expand(B, H, L, S)
    if len(shape) == 3:  # read as (B, L, S): every head of sequence b sees mask[b]
        for h in range(H):
            assert torch.equal(full[:, h], mask)
    else:
        assert torch.equal(full, mask.expand(B, H, L, S))


def test_three_d_mask_is_never_broadcast_against_heads():
    # With B == H a (B, L, S) mask would silently fit (H, L, S); it must be read per sequence.
    mask = torch.zeros(3, L, S, dtype=torch.bool)
    mask[1] = True
    out = attention_mask_for_heads(mask, 3, 3, L, S).expand(3, 3, L, S)
    assert out[1].all() and not out[0].any() and not out[2].any()


@pytest.mark.parametrize(
    ("shape", "dtype", "error", "match"),
    [
        ((B, S), torch.bool, ValueError, r"mask: expected \(L, S\)=\(4, 5\).*got \(2, 5\).*as_key_padding"),
        ((L, S + 1), torch.bool, ValueError, r"mask: expected \(L, S\)=\(4, 5\) for a 2-D mask, got \(4, 6\)"),
        ((H, L, S), torch.bool, ValueError, r"mask: expected \(B, L, S\)=\(2, 4, 5\) for a 3-D mask, got \(3, 4, 5\)"),
        ((B, H + 1, L, S), torch.bool, ValueError, r"\(B, H, L, S\)=\(2, 3, 4, 5\), got \(2, 4, 4, 5\)"),
        ((S,), torch.bool, ValueError, r"mask: expected \(L, S\), \(B, L, S\) or \(B, H, L, S\)"),
        ((L, S), torch.float32, TypeError, r"mask: expected a bool tensor \(True = may attend\), got torch.float32"),
        ((L, S), torch.int64, TypeError, "mask: expected a bool tensor .*, got torch.int64"),
    ],
)
def test_attention_mask_for_heads_rejects(shape, dtype, error, match):
    with pytest.raises(error, match=match):
        attention_mask_for_heads(torch.ones(shape, dtype=dtype), B, H, L, S)


# --- regressions found by the hostile review ---------------------------------------------------------------


def test_padding_mask_rejects_one_shot_iterables_and_scalars() -> None:
    # a generator used to be consumed by the type check, leaving a silently empty (0, S) mask
    with pytest.raises(TypeError, match=r"lengths: expected a \(B,\) integer tensor or a list of ints, got generator"):
        padding_mask((n for n in [1, 2]), 3)
    with pytest.raises(TypeError, match=r"lengths: .* got int"):
        padding_mask(3, 3)  # type: ignore[arg-type]
    assert torch.equal(padding_mask((1, 3), 3), torch.tensor([[True, False, False], [True, True, True]]))
