"""MultiHeadAttention and KVCache: parity with torch.nn.MultiheadAttention, invariants, errors."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from tformer.attention import KVCache, MultiHeadAttention
from tformer.masks import causal_mask
from tformer.positional import RotaryEmbedding

B, L, S, D, H = 3, 5, 7, 32, 4
TOL = {"atol": 1e-10, "rtol": 1e-10}


def _pair(bias: bool = True) -> tuple[MultiHeadAttention, nn.MultiheadAttention]:
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(D, H, bias=bias, batch_first=True, dtype=torch.float64)
    if bias:  # torch initialises its biases to zero; make them non-zero so they are really tested
        with torch.no_grad():
            ref.in_proj_bias.normal_()
            ref.out_proj.bias.normal_()
    return MultiHeadAttention.from_torch(ref), ref


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return (torch.randn(B, L, D, dtype=torch.float64, generator=g),
            torch.randn(B, S, D, dtype=torch.float64, generator=g))


def _masks() -> dict[str, tuple[torch.Tensor | None, dict]]:
    """Our mask (True = may attend) and the equivalent torch keyword arguments (True = may NOT attend)."""
    g = torch.Generator().manual_seed(2)
    lengths = torch.tensor([7, 4, 6])
    keep = torch.arange(S)[None, :] < lengths[:, None]  # (B, S)
    ls = torch.rand(L, S, generator=g) > 0.4
    ls[:, 0] = True  # no fully masked rows: torch would return NaN there
    bls = torch.rand(B, L, S, generator=g) > 0.4
    bls[..., 0] = True
    bhls = torch.rand(B, H, L, S, generator=g) > 0.4
    bhls[..., 0] = True
    return {
        "none": (None, {}),
        "(L,S)": (ls, {"attn_mask": ~ls}),
        "(B,1,1,S)": (keep[:, None, None, :], {"key_padding_mask": ~keep}),
        "(B,L,S)": (bls, {"attn_mask": (~bls).repeat_interleave(H, dim=0)}),  # torch wants (B·H, L, S)
        "(B,1,L,S)": (bls[:, None], {"attn_mask": (~bls).repeat_interleave(H, dim=0)}),
        "(B,H,L,S)": (bhls, {"attn_mask": (~bhls).reshape(B * H, L, S)}),
    }


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("mask_name", list(_masks()))
def test_matches_torch_outputs_weights_and_gradients(bias: bool, mask_name: str) -> None:
    ours, ref = _pair(bias)
    mask, torch_kwargs = _masks()[mask_name]
    q, kv = _inputs()
    q1, kv1 = q.clone().requires_grad_(), kv.clone().requires_grad_()
    q2, kv2 = q.clone().requires_grad_(), kv.clone().requires_grad_()
    out, weights = ours(q1, kv1, kv1, mask)
    ref_out, ref_weights = ref(q2, kv2, kv2, need_weights=True, average_attn_weights=False, **torch_kwargs)
    assert out.shape == (B, L, D) and weights.shape == (B, H, L, S)
    assert_close(out, ref_out, **TOL)
    assert_close(weights, ref_weights, **TOL)
    upstream = torch.randn(B, L, D, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    (out * upstream).sum().backward()
    (ref_out * upstream).sum().backward()
    assert_close(q1.grad, q2.grad, **TOL)
    assert_close(kv1.grad, kv2.grad, **TOL)
    in_grad = torch.cat([ours.w_q.weight.grad, ours.w_k.weight.grad, ours.w_v.weight.grad])
    assert_close(in_grad, ref.in_proj_weight.grad, **TOL)
    assert_close(ours.w_o.weight.grad, ref.out_proj.weight.grad, **TOL)
    if bias:
        in_bias_grad = torch.cat([ours.w_q.bias.grad, ours.w_k.bias.grad, ours.w_v.bias.grad])
        assert_close(in_bias_grad, ref.in_proj_bias.grad, **TOL)
        assert_close(ours.w_o.bias.grad, ref.out_proj.bias.grad, **TOL)


def test_three_d_mask_is_read_as_batch_query_key() -> None:
    ours, _ = _pair()
    q, kv = _inputs()
    bls = _masks()["(B,L,S)"][0]
    out3, w3 = ours(q, kv, kv, bls)
    out4, w4 = ours(q, kv, kv, bls[:, None].expand(B, H, L, S))
    assert_close(out3, out4, **TOL)
    assert_close(w3, w4, **TOL)
    # each batch row uses its own (L, S) slice, in every head
    assert bool((w3.masked_select(~bls[:, None].expand(B, H, L, S)) == 0).all())
    assert bool((w3.masked_select(bls[:, None].expand(B, H, L, S)) > 0).all())


def test_three_d_mask_of_wrong_shape_raises() -> None:
    ours, _ = _pair()
    q, kv = _inputs()
    with pytest.raises(ValueError, match="mask"):
        ours(q, kv, kv, torch.ones(H, L, S, dtype=torch.bool))  # (H, L, S) must not pass as (B, L, S)


@pytest.mark.parametrize("num_heads", [1, 2, 4, 8, 16, 32])
@pytest.mark.parametrize("bias", [True, False])
def test_parameter_count_closed_form(num_heads: int, bias: bool) -> None:
    d = 512
    expected = 4 * d * d + (4 * d if bias else 0)  # four D×D matrices (+ four length-D biases)
    assert expected == (1_050_624 if bias else 1_048_576)
    count = sum(p.numel() for p in MultiHeadAttention(d, num_heads, bias=bias).parameters())
    assert count == expected
    ref = nn.MultiheadAttention(d, num_heads, bias=bias)
    assert count == sum(p.numel() for p in ref.parameters())


def test_self_attention_without_positions_is_permutation_equivariant() -> None:
    ours, _ = _pair()
    x, _ = _inputs()
    perm = torch.tensor([3, 0, 4, 1, 2])
    out, weights = ours(x, x, x)
    out_p, weights_p = ours(x[:, perm], x[:, perm], x[:, perm])
    assert_close(out_p, out[:, perm], **TOL)
    assert_close(weights_p, weights[:, :, perm][:, :, :, perm], **TOL)


def test_eval_is_deterministic_with_dropout_and_training_is_not() -> None:
    torch.manual_seed(0)
    attn = MultiHeadAttention(D, H, dropout=0.5).double()
    q, kv = _inputs()
    attn.eval()
    assert torch.equal(attn(q, kv, kv)[0], attn(q, kv, kv)[0])
    attn.train()
    assert not torch.equal(attn(q, kv, kv)[0], attn(q, kv, kv)[0])


@pytest.mark.parametrize("use_rope", [False, True])
def test_cached_steps_equal_full_causal_pass(use_rope: bool) -> None:
    torch.manual_seed(0)
    rope = RotaryEmbedding(D // H) if use_rope else None
    attn = MultiHeadAttention(D, H, rope=rope).double()
    x = torch.randn(B, S, D, dtype=torch.float64)
    full, full_w = attn(x, x, x, causal_mask(S))
    cache = KVCache()
    prefix = 3  # a multi-token first chunk (needs the bottom-right causal mask), then one token at a time
    first, _ = attn(x[:, :prefix], x[:, :prefix], x[:, :prefix], causal_mask(prefix), cache=cache)
    steps = [first]
    for t in range(prefix, S):
        step, step_w = attn(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache)
        assert step_w.shape == (B, H, 1, t + 1)
        steps.append(step)
    assert len(cache) == S
    assert_close(torch.cat(steps, dim=1), full, **TOL)
    assert_close(step_w[:, :, 0], full_w[:, :, -1], **TOL)


def test_static_cache_projects_memory_once() -> None:
    ours, _ = _pair()
    q, memory = _inputs()
    cache = KVCache(static=True)
    first, _ = ours(q[:, :1], memory, memory, cache=cache)
    stored = cache.key
    later, _ = ours(q[:, 1:], memory * 0, memory * 0, cache=cache)  # key/value ignored once cached
    assert cache.key is stored and len(cache) == S
    assert_close(torch.cat([first, later], dim=1), ours(q, memory, memory)[0], **TOL)


def test_cache_reorder_selects_batch_rows() -> None:
    cache = KVCache()
    k = torch.arange(B * H * 2 * 4, dtype=torch.float64).view(B, H, 2, 4)
    cache.update(k, -k)
    index = torch.tensor([2, 2, 0])
    cache.reorder(index)
    assert torch.equal(cache.key, k[index]) and torch.equal(cache.value, -k[index])


def test_from_torch_rejects_unsupported_modules() -> None:
    with pytest.raises(ValueError, match="kdim"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(D, H, kdim=16, vdim=16))
    with pytest.raises(ValueError, match="add_bias_kv"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(D, H, add_bias_kv=True))
    with pytest.raises(TypeError, match="module"):
        MultiHeadAttention.from_torch(nn.Linear(D, D))  # type: ignore[arg-type]


def test_bad_inputs_raise_naming_the_argument() -> None:
    with pytest.raises(ValueError, match=r"^d_model: expected a multiple of num_heads=4, got 30$"):
        MultiHeadAttention(30, 4)
    attn = MultiHeadAttention(D, H)
    x = torch.randn(2, L, D)
    with pytest.raises(TypeError, match=r"query.*int64"):
        attn(torch.ones(2, L, D, dtype=torch.long), x, x)
    with pytest.raises(TypeError, match="key"):
        attn(x, torch.ones(2, L, D, dtype=torch.long), x)
    with pytest.raises(ValueError, match=r"query: expected shape \(B, L, D=32\), got \(2, 5, 33\)"):
        attn(torch.randn(2, L, D + 1), x, x)
    with pytest.raises(ValueError, match="query"):
        attn(torch.randn(L, D), x, x)
    with pytest.raises(ValueError, match=r"value: expected shape \(B=2, S=5, D=32\), got \(2, 6, 32\)"):
        attn(x, x, torch.randn(2, L + 1, D))
    with pytest.raises(TypeError, match="mask"):
        attn(x, x, x, torch.zeros(L, L))  # a float (additive) mask is not silently accepted
    with pytest.raises(ValueError, match="mask"):
        attn(x, x, x, torch.ones(L + 1, L, dtype=torch.bool))


# --- regressions found by the hostile review ---------------------------------------------------------------


def test_constructor_type_errors_name_the_argument() -> None:
    with pytest.raises(TypeError, match=r"d_model: expected an int, got float"):
        MultiHeadAttention(16.0, 4)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"num_heads: expected an int, got bool"):
        MultiHeadAttention(16, True)
    with pytest.raises(TypeError, match=r"dropout: expected a number, got str"):
        MultiHeadAttention(16, 4, dropout="0.1")  # type: ignore[arg-type]


def test_rope_of_the_wrong_head_dim_is_rejected_at_construction() -> None:
    with pytest.raises(ValueError, match=r"rope: expected a RotaryEmbedding with head_dim Dh = D / H = 4, got 8"):
        MultiHeadAttention(16, 4, rope=RotaryEmbedding(8))


def test_input_dtype_must_match_the_parameters() -> None:
    mha = MultiHeadAttention(16, 4)  # float32
    x = torch.randn(2, 3, 16, dtype=torch.float64)
    with pytest.raises(TypeError, match=r"query: expected the dtype of the parameters \(torch.float32\), got torch.float64"):
        mha(x, x, x)
    with pytest.raises(TypeError, match=r"key: expected the dtype of the parameters \(torch.float32\), got torch.float64"):
        mha(x.float(), x, x)


def test_kv_cache_rejects_keys_that_do_not_match_it() -> None:
    cache = KVCache()
    cache.update(torch.randn(2, 4, 3, 8), torch.randn(2, 4, 3, 8))
    with pytest.raises(ValueError, match=r"key, value: expected \(B, H, S_new, Dh\) each, matching the cache"):
        cache.update(torch.randn(1, 4, 1, 8), torch.randn(1, 4, 1, 8))  # another batch: was torch.cat's error
    with pytest.raises(ValueError, match=r"key, value"):
        KVCache().update(torch.randn(2, 4, 3, 8), torch.randn(2, 4, 2, 8))  # S differs between key and value
    k, v = cache.update(torch.randn(2, 4, 1, 8), torch.randn(2, 4, 1, 8))
    assert k.shape == v.shape == (2, 4, 4, 8)


def test_a_filled_static_cache_refuses_a_query_of_another_batch() -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(12, 3).eval()
    x, memory = torch.randn(2, 1, 12), torch.randn(2, 5, 12)
    cache = KVCache(static=True)
    mha(x, memory, memory, cache=cache)
    with pytest.raises(ValueError, match=r"query: expected B=2 \(the batch of the filled static cache\), got B=1"):
        mha(x[:1], memory[:1], memory[:1], cache=cache)  # used to broadcast to B=2
    growing = KVCache()
    mha(x, x, x, cache=growing)
    with pytest.raises(ValueError, match="key, value: expected"):
        mha(x[:1], x[:1], x[:1], cache=growing)


def test_bias_must_be_a_bool() -> None:
    from tformer.variants.efficient import GroupedQueryAttention

    with pytest.raises(TypeError, match="bias: expected a bool, got str"):
        MultiHeadAttention(12, 3, bias="no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bias: expected a bool, got int"):
        GroupedQueryAttention(12, 3, 1, bias=0)  # type: ignore[arg-type]
