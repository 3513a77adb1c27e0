"""ALiBi slopes against values written out by hand (powers of two and the reference rule for other head counts),
the bias against explicit loops, and ALiBi attention through torch's float-mask attention."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from tformer.attention import MultiHeadAttention
from tformer.functional import scaled_dot_product_attention
from tformer.masks import causal_mask
from tformer.models import DecoderOnlyTransformer, EncoderOnlyConfig, TransformerConfig
from tformer.positional import alibi_bias, alibi_slopes

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
    """torch's attention takes a float additive mask, so ALiBi plugs into it as bias + (-inf where the causal mask
    forbids); tformer's takes the bias as ``score_bias`` instead. Reference: the softmax written out."""
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


# ---------------------------------------------------------------- ALiBi inside tformer's attention and models


@pytest.mark.parametrize("grad", [False, True])
def test_score_bias_matches_torch_float_mask(grad: bool) -> None:
    """``score_bias`` + the bool causal mask equals torch's attention with the same float additive mask, on the
    no-autograd path and the autograd path, gradients included (float64)."""
    torch.manual_seed(1)
    B, H, L, S, Dh = 2, 4, 5, 7, 8
    q, k, v = (torch.randn(B, H, n, Dh, dtype=torch.float64, requires_grad=grad) for n in (L, S, S))
    bias = alibi_bias(H, L, S, dtype=torch.float64)  # (H, L, S)
    allowed = causal_mask(L, S)  # (L, S)
    out, weights = scaled_dot_product_attention(q, k, v, mask=allowed, score_bias=bias)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.masked_fill(~allowed, float("-inf")))
    assert_close(out, expected, atol=1e-12, rtol=1e-12)
    assert_close(weights.sum(-1), torch.ones(B, H, L, dtype=torch.float64), atol=1e-12, rtol=0)
    if grad:
        mine = torch.autograd.grad(out.square().sum(), (q, k, v))
        theirs = torch.autograd.grad(expected.square().sum(), (q, k, v))
        for a, b in zip(mine, theirs, strict=True):
            assert_close(a, b, atol=1e-12, rtol=1e-12)


def test_score_bias_errors() -> None:
    q = torch.randn(1, 2, 3, 4)
    with pytest.raises(TypeError, match=r"score_bias: expected a floating-point tensor"):
        scaled_dot_product_attention(q, q, q, score_bias=torch.zeros(2, 3, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"score_bias: expected a shape broadcastable to the scores"):
        scaled_dot_product_attention(q, q, q, score_bias=torch.zeros(5, 3, 3))


def test_multi_head_attention_with_alibi_by_hand() -> None:
    """MultiHeadAttention(alibi=True) against the attention written out with loops: for head h with slope m_h
    (2 heads: 1/16, 1/256), score(i, j) = q_i·k_j/√Dh − m_h·(i − j) for j ≤ i, softmax over j ≤ i (float64)."""
    torch.manual_seed(2)
    D, H, L = 8, 2, 5
    Dh = D // H
    mha = MultiHeadAttention(D, H, alibi=True).double().eval()
    x = torch.randn(1, L, D, dtype=torch.float64)
    with torch.no_grad():
        out, weights = mha(x, x, x, causal_mask(L))
        q, k, v = mha.w_q(x)[0], mha.w_k(x)[0], mha.w_v(x)[0]  # (L, D) each
    slopes = [1 / 16, 1 / 256]
    heads = torch.zeros(L, D, dtype=torch.float64)
    expected_weights = torch.zeros(H, L, L, dtype=torch.float64)
    for h in range(H):
        cols = slice(h * Dh, (h + 1) * Dh)
        for i in range(L):
            scores = torch.tensor([float(q[i, cols] @ k[j, cols]) / math.sqrt(Dh) - slopes[h] * (i - j)
                                   for j in range(i + 1)], dtype=torch.float64)
            w = torch.softmax(scores, dim=0)  # (i + 1,)
            expected_weights[h, i, : i + 1] = w
            heads[i, cols] = w @ v[: i + 1, cols]
    assert_close(weights[0], expected_weights, atol=1e-12, rtol=0)
    assert_close(out[0], mha.w_o(heads).detach(), atol=1e-12, rtol=0)
    # without the bias the weights differ: the check can fail
    plain = MultiHeadAttention(D, H).double().eval()
    plain.load_state_dict(mha.state_dict())
    with torch.no_grad():
        assert (plain(x, x, x, causal_mask(L))[1] - weights).abs().max() > 1e-3


def test_alibi_refuses_cross_attention_and_bidirectional_families() -> None:
    mha = MultiHeadAttention(8, 2, alibi=True)
    x, memory = torch.randn(1, 3, 8), torch.randn(1, 4, 8)
    with pytest.raises(ValueError, match=r"alibi: expected self-attention \(key is query\)"):
        mha(x, memory, memory)
    with pytest.raises(TypeError, match=r"alibi: expected a bool"):
        MultiHeadAttention(8, 2, alibi=1)  # type: ignore[arg-type]
    for config in (EncoderOnlyConfig, TransformerConfig):
        with pytest.raises(ValueError, match=r"positional: 'alibi' penalises past keys only"):
            config(16, 16, positional="alibi") if config is TransformerConfig else config(16, positional="alibi")


def test_decoder_only_with_alibi() -> None:
    """positional="alibi": no position parameters, runs past max_len, causal, and cached decoding equals the
    full forward (the cached query at position t gets the last row of the (t+1, t+1) bias)."""
    torch.manual_seed(3)
    settings = dict(d_model=16, num_heads=4, num_layers=2, d_ff=32, max_len=8, dropout=0.0, norm_first=True,
                    pad_id=None)
    model = DecoderOnlyTransformer(11, positional="alibi", **settings).double().eval()
    rope = DecoderOnlyTransformer(11, positional="rope", **settings)
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in rope.parameters())
    assert all(layer.self_attn.alibi for layer in model.body.encoder.layers)
    assert model.body.positional is None
    tokens = torch.randint(0, 11, (2, 13))  # longer than max_len = 8: ALiBi has no end
    with torch.no_grad():
        full = model(tokens)  # (B, L, V)
        changed = tokens.clone()
        changed[:, 9:] = (changed[:, 9:] + 1) % 11
        assert_close(model(changed)[:, :9], full[:, :9], atol=1e-12, rtol=0)  # the future does not leak
        cache = model.new_cache()
        stepwise = torch.cat([model(tokens[:, t : t + 1], cache=cache) for t in range(13)], dim=1)
    assert_close(stepwise, full, atol=1e-10, rtol=0)


def test_integer_dtypes_are_refused_and_half_does_not_overflow() -> None:  # breaker 12
    with pytest.raises(TypeError, match=r"dtype: expected a floating-point torch.dtype, got torch.int64"):
        alibi_slopes(4, dtype=torch.int64)  # used to round every slope to 0
    with pytest.raises(TypeError, match=r"dtype: expected a floating-point torch.dtype"):
        alibi_bias(4, 3, dtype=torch.int32)
    half = alibi_bias(1, 1, 70_000, dtype=torch.float16)  # the distance 69_999 used to become inf in float16
    assert half.dtype == torch.float16 and bool(half.isfinite().all())
    assert_close(half.float(), alibi_bias(1, 1, 70_000).half().float())
    assert torch.equal(alibi_bias(4, 5, 7), alibi_bias(4, 5, 7, dtype=torch.float32))
