"""Tests for tformer.variants.efficient (GQA/MQA, sliding windows, linear attention) (the mixture of experts is in test_moe.py).

References: tformer's MultiHeadAttention with weights copied across (itself proven against torch), explicit loops
for masks, the quadratic (n × n) form of the same kernel for linear attention, and a dense evaluation of every
expert for the mixture of experts.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from tformer.analysis.complexity import kv_cache_bytes
from tformer.attention import KVCache, MultiHeadAttention
from tformer.masks import as_key_padding, causal_mask, padding_mask
from tformer.positional import RotaryEmbedding
from tformer.variants.efficient import (
    GroupedQueryAttention,
    LinearAttention,
    elu_feature_map,
    linear_attention,
    sliding_window_mask,
)
from tformer.variants.moe import MixtureOfExperts, load_balancing_loss

TOL = {torch.float64: {"atol": 1e-10, "rtol": 1e-10}, torch.float32: {"atol": 1e-6, "rtol": 1e-6}}


# ------------------------------------------------------------------------------------------- sliding window
@pytest.mark.parametrize(("L", "S", "window"), [(6, 6, 3), (3, 7, 2), (5, 5, 1), (4, 9, 4)])
def test_sliding_window_mask_values(L: int, S: int, window: int) -> None:
    mask = sliding_window_mask(L, window, S)
    expected = torch.zeros(L, S, dtype=torch.bool)
    for i in range(L):
        position = S - L + i
        for j in range(S):
            expected[i, j] = position - window < j <= position
    assert mask.dtype == torch.bool
    assert torch.equal(mask, expected)
    assert int(mask.sum(dim=1).max()) == min(window, S)


def test_sliding_window_wide_is_causal_and_bad_inputs() -> None:
    assert torch.equal(sliding_window_mask(5, 5), causal_mask(5))
    assert torch.equal(sliding_window_mask(3, 100, 8), causal_mask(3, 8))
    with pytest.raises(ValueError, match="window"):
        sliding_window_mask(4, 0)
    with pytest.raises(ValueError, match="S"):
        sliding_window_mask(5, 2, 3)
    with pytest.raises(TypeError, match="window"):
        sliding_window_mask(5, 2.0)


# ---------------------------------------------------------------------------------------------------- GQA
def _copy_mha_into_gqa(mha: MultiHeadAttention, gqa: GroupedQueryAttention) -> None:
    with torch.no_grad():
        for name in ("w_q", "w_k", "w_v", "w_o"):
            getattr(gqa, name).weight.copy_(getattr(mha, name).weight)
            getattr(gqa, name).bias.copy_(getattr(mha, name).bias)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("masked", ["none", "causal", "padding"])
def test_gqa_with_one_head_per_group_equals_mha(dtype: torch.dtype, masked: str) -> None:
    torch.manual_seed(0)
    B, L, D, H = 2, 5, 32, 4
    mha = MultiHeadAttention(D, H).to(dtype).eval()
    gqa = GroupedQueryAttention(D, H, H).to(dtype).eval()
    _copy_mha_into_gqa(mha, gqa)
    x = torch.randn(B, L, D, dtype=dtype)
    mask = {"none": None, "causal": causal_mask(L), "padding": as_key_padding(padding_mask([5, 3], L))}[masked]
    out_mha, w_mha = mha(x, x, x, mask)
    out_gqa, w_gqa = gqa(x, x, x, mask)
    assert_close(out_gqa, out_mha, **TOL[dtype])
    assert_close(w_gqa, w_mha, **TOL[dtype])
    assert_close(GroupedQueryAttention.from_multi_head(mha, H)(x, x, x, mask)[0], out_mha, **TOL[dtype])


@pytest.mark.parametrize("num_kv_heads", [1, 2])
def test_gqa_equals_mha_with_repeated_key_value_heads(num_kv_heads: int) -> None:
    # Reference: an MHA whose key/value projections repeat each shared head G times (Llama's repeat_kv).
    torch.manual_seed(1)
    B, L, S, D, H = 2, 3, 6, 24, 4
    gqa = GroupedQueryAttention(D, H, num_kv_heads).double().eval()
    G, Dh = H // num_kv_heads, D // H
    mha = MultiHeadAttention(D, H).double().eval()
    with torch.no_grad():
        for name in ("w_q", "w_o"):
            getattr(mha, name).weight.copy_(getattr(gqa, name).weight)
            getattr(mha, name).bias.copy_(getattr(gqa, name).bias)
        for name in ("w_k", "w_v"):
            ours = getattr(gqa, name)
            getattr(mha, name).weight.copy_(ours.weight.view(num_kv_heads, Dh, D).repeat_interleave(G, 0).reshape(D, D))
            getattr(mha, name).bias.copy_(ours.bias.view(num_kv_heads, Dh).repeat_interleave(G, 0).reshape(D))
    q, kv = torch.randn(B, L, D, dtype=torch.float64), torch.randn(B, S, D, dtype=torch.float64)
    mask = torch.rand(B, H, L, S) > 0.3
    expected, expected_w = mha(q, kv, kv, mask)
    out, weights = gqa(q, kv, kv, mask)
    assert_close(out, expected, **TOL[torch.float64])
    assert_close(weights, expected_w, **TOL[torch.float64])


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
def test_gqa_with_rope_equals_mha_with_rope_and_cached_decoding(num_kv_heads: int) -> None:
    # Reference: tformer's MultiHeadAttention with the same RotaryEmbedding (proven in test_positional), its
    # key/value heads repeated G times; then step-by-step decoding through the cache equals the full pass.
    torch.manual_seed(3)
    B, L, D, H = 2, 7, 32, 4
    rope = RotaryEmbedding(D // H)
    gqa = GroupedQueryAttention(D, H, num_kv_heads, rope=rope).double().eval()
    G, Dh = H // num_kv_heads, D // H
    mha = MultiHeadAttention(D, H, rope=rope).double().eval()
    with torch.no_grad():
        for name in ("w_q", "w_o"):
            getattr(mha, name).load_state_dict(getattr(gqa, name).state_dict())
        for name in ("w_k", "w_v"):
            ours = getattr(gqa, name)
            getattr(mha, name).weight.copy_(ours.weight.view(num_kv_heads, Dh, D).repeat_interleave(G, 0).reshape(D, D))
            getattr(mha, name).bias.copy_(ours.bias.view(num_kv_heads, Dh).repeat_interleave(G, 0).reshape(D))
    x = torch.randn(B, L, D, dtype=torch.float64)
    full, weights = gqa(x, x, x, causal_mask(L))
    expected, expected_w = mha(x, x, x, causal_mask(L))
    assert_close(full, expected, **TOL[torch.float64])
    assert_close(weights, expected_w, **TOL[torch.float64])
    cache = KVCache()
    steps = [gqa(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache)[0] for t in range(L)]
    assert_close(torch.cat(steps, dim=1), full, **TOL[torch.float64])
    assert cache.key.shape == (B, num_kv_heads, L, Dh)
    if num_kv_heads == H:  # the converted module keeps the rotary embedding
        assert_close(GroupedQueryAttention.from_multi_head(mha, H)(x, x, x, causal_mask(L))[0], expected,
                     **TOL[torch.float64])


def test_gqa_rope_changes_the_output() -> None:
    # The rotation is applied at all: without it the same weights give a different output.
    torch.manual_seed(4)
    with_rope = GroupedQueryAttention(16, 4, 2, rope=RotaryEmbedding(4)).eval()
    without = GroupedQueryAttention(16, 4, 2).eval()
    without.load_state_dict(with_rope.state_dict())
    x = torch.randn(1, 5, 16)
    assert (with_rope(x, x, x, causal_mask(5))[0] - without(x, x, x, causal_mask(5))[0]).abs().max() > 1e-3


def test_mqa_shapes_cache_size_and_cached_decoding() -> None:
    torch.manual_seed(2)
    B, L, D, H = 2, 7, 32, 8
    mqa = GroupedQueryAttention(D, H, 1).eval()
    assert mqa.w_k.weight.shape == (D // H, D) and mqa.w_v.weight.shape == (D // H, D)
    x = torch.randn(B, L, D)
    full, _ = mqa(x, x, x, causal_mask(L))
    cache = KVCache()
    steps = [mqa(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache)[0] for t in range(L)]
    assert_close(torch.cat(steps, dim=1), full, **TOL[torch.float32])
    assert cache.key.shape == (B, 1, L, D // H)
    measured = sum(t.numel() * t.element_size() for t in (cache.key, cache.value))
    assert measured == kv_cache_bytes(L, num_layers=1, num_kv_heads=1, head_dim=D // H, batch=B)
    mha_bytes = kv_cache_bytes(L, num_layers=1, num_kv_heads=H, head_dim=D // H, batch=B)
    assert mha_bytes == H * measured


def test_from_multi_head_mean_pools_key_value_heads() -> None:
    mha = MultiHeadAttention(16, 4)
    gqa = GroupedQueryAttention.from_multi_head(mha, 2)
    Dh = 4
    for name in ("w_k", "w_v"):
        theirs = getattr(mha, name).weight
        expected = torch.cat([(theirs[0:Dh] + theirs[Dh : 2 * Dh]) / 2, (theirs[2 * Dh : 3 * Dh] + theirs[3 * Dh :]) / 2])
        assert_close(getattr(gqa, name).weight, expected)
    assert torch.equal(gqa.w_q.weight, mha.w_q.weight)
    with pytest.raises(TypeError):
        GroupedQueryAttention.from_multi_head(nn.Linear(4, 4), 1)


def test_gqa_bad_arguments() -> None:
    with pytest.raises(ValueError, match=r"^num_heads: expected a multiple of num_kv_heads=4, got 6$"):
        GroupedQueryAttention(24, 6, 4)
    with pytest.raises(ValueError, match="d_model"):
        GroupedQueryAttention(30, 4, 2)
    with pytest.raises(ValueError, match="positive"):
        GroupedQueryAttention(16, 4, 0)
    gqa = GroupedQueryAttention(16, 4, 2)
    with pytest.raises(ValueError, match="query"):
        gqa(torch.randn(2, 3, 8), torch.randn(2, 3, 16), torch.randn(2, 3, 16))
    with pytest.raises(TypeError):
        gqa(torch.ones(2, 3, 16, dtype=torch.long), torch.randn(2, 3, 16), torch.randn(2, 3, 16))


# ----------------------------------------------------------------------------------------- linear attention
def _quadratic_linear_attention(q, k, v, causal: bool, eps: float = 0.0):
    """The same kernel written the slow way: an explicit (L, S) weight matrix."""
    similarity = elu_feature_map(q) @ elu_feature_map(k).transpose(-2, -1)  # (..., L, S)
    if causal:
        similarity = similarity * causal_mask(q.shape[-2]).to(similarity.dtype)
    weights = similarity / (similarity.sum(dim=-1, keepdim=True) + eps)
    return weights @ v


@pytest.mark.parametrize("causal", [False, True])
def test_linear_attention_equals_quadratic_form(causal: bool) -> None:
    torch.manual_seed(3)
    q, k = torch.randn(2, 3, 9, 4, dtype=torch.float64), torch.randn(2, 3, 9, 4, dtype=torch.float64)
    v = torch.randn(2, 3, 9, 5, dtype=torch.float64)
    assert_close(linear_attention(q, k, v, causal=causal, eps=0.0), _quadratic_linear_attention(q, k, v, causal),
                 **TOL[torch.float64])


def test_elu_feature_map_is_positive_and_linear_attention_is_causal() -> None:
    x = torch.linspace(-20, 5, 101, dtype=torch.float64)  # in float32 exp(-20) - 1 rounds to -1
    assert bool((elu_feature_map(x) > 0).all())
    torch.manual_seed(4)
    q, k, v = (torch.randn(1, 8, 4) for _ in range(3))
    out = linear_attention(q, k, v, causal=True)
    k2, v2 = k.clone(), v.clone()
    k2[:, 5:], v2[:, 5:] = torch.randn(1, 3, 4), torch.randn(1, 3, 4)
    assert_close(linear_attention(q, k2, v2, causal=True)[:, :5], out[:, :5], **TOL[torch.float32])
    with pytest.raises(ValueError, match="L == S"):
        linear_attention(q, k[:, :5], v[:, :5], causal=True)
    with pytest.raises(ValueError):
        linear_attention(q, k[..., :3], v)


def test_linear_attention_module_uses_its_projections() -> None:
    torch.manual_seed(5)
    layer = LinearAttention(12, 3).double()
    x = torch.randn(2, 6, 12, dtype=torch.float64)
    split = lambda t: t.view(2, 6, 3, 4).transpose(1, 2)  # noqa: E731
    ctx = _quadratic_linear_attention(split(layer.w_q(x)), split(layer.w_k(x)), split(layer.w_v(x)), True, 1e-6)
    expected = layer.w_o(ctx.transpose(1, 2).reshape(2, 6, 12))
    assert_close(layer(x, x, x, causal=True), expected, **TOL[torch.float64])
    with pytest.raises(ValueError):
        LinearAttention(10, 3)


def test_linear_attention_module_rejects_mismatched_batches_and_bad_inputs() -> None:
    la = LinearAttention(16, 4)
    x = torch.randn(2, 3, 16)
    with pytest.raises(ValueError, match=r"key: expected shape \(B=2, S, D=16\), got \(1, 3, 16\)"):
        la(x, x[:1], x[:1])  # used to broadcast the single key sequence silently over both queries
    with pytest.raises(TypeError, match=r"query: expected a floating-point tensor \(B, L, D\), got torch.int64"):
        la(x.long(), x, x)
    with pytest.raises(TypeError, match=r"d_model: expected an int, got float"):
        LinearAttention(16.0, 4)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"query: expected a floating-point tensor \(\.\.\., L, Dh\), got torch.int64"):
        linear_attention(torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3), torch.ones(2, 3))
    with pytest.raises(ValueError, match=r"query: expected shape \(\.\.\., L, Dh\), got \(3,\)"):
        linear_attention(torch.ones(3), torch.ones(3), torch.ones(3))


def test_gqa_and_moe_argument_errors() -> None:
    with pytest.raises(TypeError, match=r"d_model: expected an int, got float"):
        GroupedQueryAttention(16.0, 4, 2)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"query: expected a floating-point tensor \(B, L, D\), got torch.int64"):
        GroupedQueryAttention(16, 4, 2)(torch.ones(1, 2, 16, dtype=torch.long), torch.ones(1, 2, 16),
                                        torch.ones(1, 2, 16))
    with pytest.raises(ValueError, match=r"rope: expected a RotaryEmbedding with head_dim Dh = D / H = 4, got 8"):
        GroupedQueryAttention(16, 4, 2, rope=RotaryEmbedding(8))
    with pytest.raises(ValueError, match=r"rope: query length L \(2\) must equal key length S \(3\)"):
        GroupedQueryAttention(16, 4, 2, rope=RotaryEmbedding(4))(torch.ones(1, 2, 16), torch.ones(1, 3, 16),
                                                                 torch.ones(1, 3, 16))
    moe = MixtureOfExperts(16, 32, 4)
    with pytest.raises(TypeError, match=r"x: expected a floating-point tensor \(\.\.\., D\), got list"):
        moe([1.0])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"num_experts: expected an int, got float"):
        MixtureOfExperts(16, 32, 4.0)  # type: ignore[arg-type]
    probs = torch.full((3, 4), 0.25)
    with pytest.raises(ValueError, match=r"indices: expected ids in \[0, E=4\), got min 5, max 5"):
        load_balancing_loss(probs, torch.full((3, 1), 5), 4)


def test_linear_attention_and_window_mask_messages() -> None:  # breaker MESSAGE and NIT
    q = k = v = torch.randn(1, 4, 8)
    with pytest.raises(TypeError, match=r"key: expected the dtype of query \(torch.float32\), got torch.float64"):
        linear_attention(q, k.double(), v)
    with pytest.raises(TypeError, match=r"value: expected the dtype of query \(torch.float32\), got torch.float16"):
        linear_attention(q, k, v.half())
    with pytest.raises(ValueError, match=r"S: expected S >= L=5 \(keys cover the queries\), got 3"):
        sliding_window_mask(5, 2, S=3)


def test_gqa_with_rope_refuses_cross_attention_of_equal_length() -> None:
    gqa = GroupedQueryAttention(16, 4, 2, rope=RotaryEmbedding(4))
    query, memory = torch.randn(1, 3, 16), torch.randn(1, 3, 16)
    with pytest.raises(ValueError, match=r"rope: expected self-attention \(key is query\), got a different key"):
        gqa(query, memory, memory)  # the MultiHeadAttention refusal, same wording
    assert gqa(query, query, query)[0].shape == (1, 3, 16)
