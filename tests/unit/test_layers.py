"""FeedForward, EncoderLayer, DecoderLayer and the stacks: parity with torch's layers, outputs and gradients."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

from tformer.layers import Decoder, DecoderLayer, Encoder, EncoderLayer, FeedForward
from tformer.masks import causal_mask

B, L, S, D, H, FF = 3, 5, 7, 32, 4, 64
TOL = {"atol": 1e-10, "rtol": 1e-10}


def _randomise(module: nn.Module) -> None:
    """torch zero-initialises biases and sets LayerNorm to (1, 0); randomise all so every weight is tested."""
    torch.manual_seed(0)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.3)


def _x(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


def _grads(module: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad for n, p in module.named_parameters()}


_ENCODER_NAMES = {  # ours -> torch, besides the attention blocks
    "ffn.w_1.weight": "linear1.weight", "ffn.w_1.bias": "linear1.bias",
    "ffn.w_2.weight": "linear2.weight", "ffn.w_2.bias": "linear2.bias",
    "norm1.weight": "norm1.weight", "norm1.bias": "norm1.bias", "norm2.weight": "norm2.weight",
    "norm2.bias": "norm2.bias",
}


def _attn_grad(ours: dict, ref: dict, our_prefix: str, ref_prefix: str) -> None:
    w = torch.cat([ours[f"{our_prefix}.w_{x}.weight"] for x in "qkv"])
    assert_close(w, ref[f"{ref_prefix}.in_proj_weight"], **TOL)
    b = torch.cat([ours[f"{our_prefix}.w_{x}.bias"] for x in "qkv"])
    assert_close(b, ref[f"{ref_prefix}.in_proj_bias"], **TOL)
    assert_close(ours[f"{our_prefix}.w_o.weight"], ref[f"{ref_prefix}.out_proj.weight"], **TOL)
    assert_close(ours[f"{our_prefix}.w_o.bias"], ref[f"{ref_prefix}.out_proj.bias"], **TOL)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_matches_torch(norm_first: bool, activation: str) -> None:
    ref = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation=activation, batch_first=True,
                                     norm_first=norm_first, dtype=torch.float64)
    _randomise(ref)
    ours = EncoderLayer.from_torch(ref)
    assert ref.training and ours.training  # training mode (dropout 0) keeps torch off its fast path
    keep = torch.arange(L)[None, :] < torch.tensor([5, 3, 4])[:, None]  # (B, L) real tokens
    attn_mask = causal_mask(L)
    x = _x(B, L, D, seed=1)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    out, weights = ours(x1, attn_mask[None, None] & keep[:, None, None, :])
    ref_out = ref(x2, src_mask=~attn_mask, src_key_padding_mask=~keep)  # torch: True = NOT allowed
    assert weights.shape == (B, H, L, L)
    assert_close(out, ref_out, **TOL)
    upstream = _x(B, L, D, seed=2)
    (out * upstream).sum().backward()
    (ref_out * upstream).sum().backward()
    assert_close(x1.grad, x2.grad, **TOL)
    g, rg = _grads(ours), _grads(ref)
    for name, ref_name in _ENCODER_NAMES.items():
        assert_close(g[name], rg[ref_name], **TOL)
    _attn_grad(g, rg, "self_attn", "self_attn")


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(norm_first: bool) -> None:
    ref = nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first,
                                     dtype=torch.float64)
    _randomise(ref)
    ours = DecoderLayer.from_torch(ref)
    src_keep = torch.arange(S)[None, :] < torch.tensor([7, 2, 5])[:, None]  # (B, S)
    y, memory = _x(B, L, D, seed=1), _x(B, S, D, seed=2)
    y1, y2 = y.clone().requires_grad_(), y.clone().requires_grad_()
    m1, m2 = memory.clone().requires_grad_(), memory.clone().requires_grad_()
    out, self_w, cross_w = ours(y1, m1, causal_mask(L), src_keep[:, None, None, :])
    ref_out = ref(y2, m2, tgt_mask=~causal_mask(L), memory_key_padding_mask=~src_keep)
    assert self_w.shape == (B, H, L, L) and cross_w.shape == (B, H, L, S)
    assert_close(out, ref_out, **TOL)
    upstream = _x(B, L, D, seed=3)
    (out * upstream).sum().backward()
    (ref_out * upstream).sum().backward()
    assert_close(y1.grad, y2.grad, **TOL)
    assert_close(m1.grad, m2.grad, **TOL)
    g, rg = _grads(ours), _grads(ref)
    for name, ref_name in {**_ENCODER_NAMES, "norm3.weight": "norm3.weight", "norm3.bias": "norm3.bias"}.items():
        assert_close(g[name], rg[ref_name], **TOL)
    _attn_grad(g, rg, "self_attn", "self_attn")
    _attn_grad(g, rg, "cross_attn", "multihead_attn")


@pytest.mark.parametrize("norm_first", [False, True])
def test_stacks_match_torch_and_only_pre_norm_has_a_final_norm(norm_first: bool) -> None:
    enc_layer = nn.TransformerEncoderLayer(D, H, FF, 0.0, batch_first=True, norm_first=norm_first,
                                           dtype=torch.float64)
    dec_layer = nn.TransformerDecoderLayer(D, H, FF, 0.0, batch_first=True, norm_first=norm_first,
                                           dtype=torch.float64)
    final = lambda: nn.LayerNorm(D, dtype=torch.float64) if norm_first else None  # noqa: E731
    ref_enc = nn.TransformerEncoder(enc_layer, 2, norm=final(), enable_nested_tensor=False)
    ref_dec = nn.TransformerDecoder(dec_layer, 2, norm=final())
    _randomise(ref_enc)
    _randomise(ref_dec)
    enc = Encoder(2, D, H, FF, 0.0, norm_first).double()
    dec = Decoder(2, D, H, FF, 0.0, norm_first).double()
    assert (enc.final_norm is not None) == norm_first and (dec.final_norm is not None) == norm_first
    enc.layers = nn.ModuleList(EncoderLayer.from_torch(x) for x in ref_enc.layers)
    dec.layers = nn.ModuleList(DecoderLayer.from_torch(x) for x in ref_dec.layers)
    if norm_first:
        enc.final_norm.load_state_dict(ref_enc.norm.state_dict())
        dec.final_norm.load_state_dict(ref_dec.norm.state_dict())
    x, y = _x(B, S, D, seed=1), _x(B, L, D, seed=2)
    memory, enc_w = enc(x)
    assert_close(memory, ref_enc(x), **TOL)
    out, self_w, cross_w = dec(y, memory, causal_mask(L))
    assert_close(out, ref_dec(y, memory, tgt_mask=~causal_mask(L)), **TOL)
    assert len(enc_w) == len(self_w) == len(cross_w) == 2


def test_pre_norm_layer_with_zeroed_sublayers_returns_its_input() -> None:
    layer = EncoderLayer(D, H, FF, norm_first=True).double()
    with torch.no_grad():
        for lin in (layer.self_attn.w_o, layer.ffn.w_2):
            lin.weight.zero_()
            lin.bias.zero_()
    x = _x(B, L, D, seed=1)
    assert_close(layer(x)[0], x, atol=0.0, rtol=0.0)


def test_feed_forward_formula_and_errors() -> None:
    ffn = FeedForward(D, FF).double()
    x = _x(B, L, D, seed=1)
    expected = F.relu(x @ ffn.w_1.weight.T + ffn.w_1.bias) @ ffn.w_2.weight.T + ffn.w_2.bias  # §3.3, Eq. 2
    assert_close(ffn(x), expected, **TOL)
    assert sum(p.numel() for p in ffn.parameters()) == 2 * D * FF + FF + D
    with pytest.raises(ValueError, match="activation"):
        FeedForward(D, FF, activation="tanh")


def test_layers_return_weights_and_keep_no_state() -> None:
    layer = DecoderLayer(D, H, FF).double()
    out, self_w, cross_w = layer(_x(B, L, D, seed=1), _x(B, S, D, seed=2), causal_mask(L))
    assert out.shape == (B, L, D)
    assert_close(cross_w.sum(-1), torch.ones(B, H, L, dtype=torch.float64), **TOL)
    assert bool((self_w.masked_select(~causal_mask(L)) == 0).all())
    assert not any(isinstance(v, torch.Tensor) for v in vars(layer).values())


def test_errors() -> None:
    with pytest.raises(ValueError, match=r"^d_model: expected a multiple of num_heads=4, got 30$"):
        EncoderLayer(30, 4, FF)
    with pytest.raises(ValueError, match="num_layers"):
        Encoder(0, D, H, FF)
    with pytest.raises(TypeError, match="layer"):
        EncoderLayer.from_torch(nn.TransformerDecoderLayer(D, H, FF, batch_first=True))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="layer"):
        DecoderLayer.from_torch(nn.TransformerEncoderLayer(D, H, FF, batch_first=True))  # type: ignore[arg-type]


# --- regressions found by the hostile review ---------------------------------------------------------------


def _torch_encoder_layer(**kwargs: object) -> nn.TransformerEncoderLayer:
    return nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True, **kwargs)


def test_from_torch_rejects_settings_it_cannot_copy() -> None:
    """Each of these used to build a layer that silently computed something else (or crashed obscurely)."""
    with pytest.raises(ValueError, match=r"layer: expected the activation relu or exact gelu.*tanh"):
        EncoderLayer.from_torch(_torch_encoder_layer(activation=nn.GELU(approximate="tanh")))
    layer = _torch_encoder_layer()
    layer.norm2.eps = 1e-2  # only norm1.eps used to be read
    with pytest.raises(ValueError, match=r"layer: expected one eps shared by every LayerNorm, got \[1e-05, 0.01\]"):
        EncoderLayer.from_torch(layer)
    layer = _torch_encoder_layer()
    layer.norm1 = nn.LayerNorm(8, elementwise_affine=False)
    with pytest.raises(ValueError, match=r"layer: expected norm1 an affine LayerNorm"):
        EncoderLayer.from_torch(layer)
    layer = nn.TransformerEncoderLayer(8, 2, 16, 0.1, batch_first=True)
    layer.dropout1.p = 0.3
    with pytest.raises(ValueError, match=r"layer: expected one rate shared by every dropout, got \[0.1, 0.3\]"):
        EncoderLayer.from_torch(layer)
    decoder = nn.TransformerDecoderLayer(8, 2, 16, 0.0, batch_first=True)
    decoder.norm3.eps = 0.1
    with pytest.raises(ValueError, match=r"layer: expected one eps shared by every LayerNorm"):
        DecoderLayer.from_torch(decoder)


def test_from_torch_exact_gelu_module_still_matches() -> None:
    torch.manual_seed(0)
    layer = _torch_encoder_layer(activation=nn.GELU()).double().eval()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    assert_close(EncoderLayer.from_torch(layer)(x)[0], layer(x), atol=1e-10, rtol=1e-10)


def test_feed_forward_checks_its_input_and_sizes() -> None:
    ffn = FeedForward(16, 32)
    with pytest.raises(TypeError, match=r"x: expected a floating-point tensor \(\.\.\., D\), got torch.int64"):
        ffn(torch.ones(1, 2, 16, dtype=torch.long))
    with pytest.raises(ValueError, match=r"x: expected shape \(\.\.\., D=16\), got \(1, 2, 8\)"):
        ffn(torch.ones(1, 2, 8))
    with pytest.raises(TypeError, match=r"x: expected the dtype of the parameters \(torch.float32\), got torch.float64"):
        ffn(torch.ones(1, 2, 16, dtype=torch.float64))
    with pytest.raises(TypeError, match=r"d_ff: expected an int, got float"):
        FeedForward(16, 32.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"dropout: expected a number in \[0, 1\), got 1.5"):
        FeedForward(16, 32, dropout=1.5)
    assert ffn(torch.randn(5, 16)).shape == (5, 16)  # any leading dimensions (the MoE experts rely on it)


def test_layer_norm_eps_and_num_layers_are_validated() -> None:
    with pytest.raises(ValueError, match=r"layer_norm_eps: expected a number >= 0, got -1"):
        EncoderLayer(16, 4, 32, layer_norm_eps=-1)
    with pytest.raises(ValueError, match=r"layer_norm_eps"):
        DecoderLayer(16, 4, 32, layer_norm_eps=float("nan"))
    with pytest.raises(TypeError, match=r"num_layers: expected an int, got float"):
        Encoder(2.0, 16, 4, 32)  # type: ignore[arg-type]


@pytest.mark.parametrize("norm_first", [False, True])
def test_layer_inputs_are_checked_before_the_first_norm(norm_first: bool) -> None:
    # A pre-norm layer used to let LayerNorm fail first, with torch's "mixed dtype" RuntimeError.
    enc, dec = EncoderLayer(16, 4, 32, norm_first=norm_first), DecoderLayer(16, 4, 32, norm_first=norm_first)
    x = torch.randn(2, 5, 16)
    with pytest.raises(TypeError, match=r"x: expected a floating-point tensor \(B, \*, D\), got torch.int64"):
        enc(x.long())
    with pytest.raises(ValueError, match=r"x: expected shape \(B, \*, D=16\), got \(2, 5, 15\)"):
        enc(x[..., :15])
    with pytest.raises(TypeError, match=r"x: expected the dtype of the parameters \(torch.float32\), got torch.float64"):
        enc(x.double())
    with pytest.raises(TypeError, match=r"memory: expected a floating-point tensor .* torch.int64"):
        dec(x, x.long())


@pytest.mark.parametrize("norm_first", [False, True])
def test_stacks_without_bias_have_no_bias_anywhere(norm_first: bool) -> None:
    enc = Encoder(2, D, H, FF, norm_first=norm_first, bias=False)
    dec = Decoder(2, D, H, FF, norm_first=norm_first, bias=False)
    for stack in (enc, dec):
        assert not [name for name, _ in stack.named_parameters() if name.endswith("bias")]
        assert (stack.final_norm is not None) == norm_first
    forced = Encoder(1, D, H, FF, final_norm=True, bias=False)  # a post-norm stack may ask for one too
    assert forced.final_norm is not None and forced.final_norm.bias is None
    assert Decoder(1, D, H, FF, norm_first=True, final_norm=False).final_norm is None
    with pytest.raises(TypeError, match=r"final_norm: expected a bool or None, got str"):
        Encoder(1, D, H, FF, final_norm="yes")  # type: ignore[arg-type]


def test_decoder_rope_reaches_self_attention_only() -> None:
    from tformer.positional import RotaryEmbedding

    dec = Decoder(2, D, H, FF, rope=RotaryEmbedding(D // H)).double().eval()
    assert all(layer.self_attn.rope is not None and layer.cross_attn.rope is None for layer in dec.layers)
    y, memory = _x(B, L, D, seed=1), _x(B, S, D, seed=2)
    assert dec(y, memory, causal_mask(L))[0].shape == (B, L, D)


def test_flags_must_be_bools() -> None:  # breaker 7: norm_first="no" used to build a pre-norm layer
    for build in (lambda **kw: EncoderLayer(16, 4, 32, **kw), lambda **kw: DecoderLayer(16, 4, 32, **kw),
                  lambda **kw: Encoder(1, 16, 4, 32, **kw), lambda **kw: Decoder(1, 16, 4, 32, **kw)):
        with pytest.raises(TypeError, match=r"norm_first: expected a bool, got str"):
            build(norm_first="no")
        with pytest.raises(TypeError, match=r"bias: expected a bool, got int"):
            build(bias=0)
    with pytest.raises(TypeError, match=r"bias: expected a bool, got NoneType"):
        FeedForward(16, 32, bias=None)


def test_stack_errors_name_memory_and_cache() -> None:  # breaker MESSAGE
    from tformer.attention import KVCache

    x = torch.randn(2, 5, 16)
    with pytest.raises(ValueError, match=r"memory: expected shape \(B=2, S, D=16\), got \(3, 7, 16\)"):
        Decoder(1, 16, 4, 32)(x, torch.randn(3, 7, 16))
    with pytest.raises(ValueError, match=r"cache: expected one KVCache per layer, 2 in all, got 1"):
        Encoder(2, 16, 4, 32)(x, cache=[KVCache()])
    with pytest.raises(TypeError, match=r"cache: expected a list of one \(self, cross\) KVCache pair"):
        Decoder(1, 16, 4, 32)(x, torch.randn(2, 7, 16), cache=KVCache())
