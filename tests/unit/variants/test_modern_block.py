"""Tests for tformer.variants.modern_block: the Llama-style layer and language model (the 2024 block).

References: a layer written out by hand from torch's own pieces (``torch.nn.RMSNorm``, ``F.silu``) around
tformer's MultiHeadAttention with the same RotaryEmbedding (proven in test_positional and test_attention), with
weights copied across in float64; the full forward pass for cached decoding; the parameter formula for counts.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

from tformer.analysis.complexity import kv_cache_bytes
from tformer.attention import MultiHeadAttention
from tformer.masks import causal_mask
from tformer.positional import RotaryEmbedding
from tformer.variants import ModernDecoderLayer, ModernDecoderLM, modern_lm_parameter_count

V, D, H, LAYERS, F_FF, MAX_LEN = 23, 32, 4, 2, 48, 40


def _model(num_kv_heads: int = 2, seed: int = 0) -> ModernDecoderLM:
    torch.manual_seed(seed)
    return ModernDecoderLM(V, D, H, num_kv_heads, LAYERS, F_FF, max_len=MAX_LEN).eval()


def _tokens(B: int, L: int, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, V, (B, L), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize(("num_kv_heads", "layers", "d_ff"), [(4, 2, 48), (2, 1, 40), (1, 3, 7)])
def test_parameter_count_formula_equals_counted_parameters(num_kv_heads: int, layers: int, d_ff: int) -> None:
    model = ModernDecoderLM(V, D, H, num_kv_heads, layers, d_ff, max_len=16)
    counted = sum(p.numel() for p in model.parameters())
    assert modern_lm_parameter_count(V, D, H, num_kv_heads, layers, d_ff) == counted
    # The key/value projections shrink with H_kv: one layer's W_K is (H_kv·Dh, D).
    assert model.layers[0].attention.w_k.weight.shape == (num_kv_heads * (D // H), D)


def test_no_bias_parameters_anywhere() -> None:
    model = _model()
    assert not [name for name, _ in model.named_parameters() if "bias" in name]
    assert all(m.bias is None for m in model.modules() if isinstance(m, nn.Linear))
    # Only the RMSNorm gains are vectors: 2 per layer plus the final norm, each (D,).
    vectors = [p.shape for p in model.parameters() if p.dim() == 1]
    assert vectors == [(D,)] * (2 * LAYERS + 1)


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
def test_cached_decoding_equals_the_full_forward(num_kv_heads: int) -> None:
    model = _model(num_kv_heads)
    B, L = 2, 11
    tokens = _tokens(B, L)
    with torch.no_grad():
        full = model(tokens)  # (B, L, V)
        cache = model.new_cache()
        first = model(tokens[:, :4], cache=cache)  # a prompt of 4, then one token at a time
        steps = [model(tokens[:, t : t + 1], cache=cache) for t in range(4, L)]
    assert_close(torch.cat([first, *steps], dim=1), full, atol=1e-5, rtol=1e-5)
    # The cache holds H_kv heads: its bytes are the formula's (float32).
    Dh = D // H
    assert cache[0].key.shape == (B, num_kv_heads, L, Dh)
    measured = sum(t.numel() * t.element_size() for c in cache for t in (c.key, c.value))
    assert measured == kv_cache_bytes(L, num_layers=LAYERS, num_kv_heads=num_kv_heads, head_dim=Dh, batch=B)


def test_generate_with_and_without_cache_is_identical() -> None:
    model = _model(1)
    prompt = _tokens(3, 5)
    cached = model.generate(prompt, 12)
    assert cached.shape == (3, 17) and torch.equal(cached[:, :5], prompt)
    assert torch.equal(cached, model.generate(prompt, 12, use_cache=False))


@pytest.mark.parametrize("changed", [5, 8])
def test_future_tokens_do_not_change_earlier_logits(changed: int) -> None:
    model = _model()
    tokens = _tokens(2, 9)
    altered = tokens.clone()
    altered[:, changed:] = (altered[:, changed:] + 7) % V
    with torch.no_grad():
        before, after = model(tokens), model(altered)
    assert_close(after[:, :changed], before[:, :changed], atol=0, rtol=0)
    assert (after[:, changed] - before[:, changed]).abs().max() > 1e-4  # the changed position does move


class _ReferenceLayer(nn.Module):
    """Llama's layer written out: x + MHA(RMSNorm(x)), then h + W_2(SiLU(W_1 n) ⊙ W_3 n), n = RMSNorm(h)."""

    def __init__(self, rope: RotaryEmbedding) -> None:
        super().__init__()
        self.norm_1, self.norm_2 = nn.RMSNorm(D, eps=1e-5), nn.RMSNorm(D, eps=1e-5)
        self.mha = MultiHeadAttention(D, H, bias=False, rope=rope)
        self.w_1, self.w_3 = nn.Linear(D, F_FF, bias=False), nn.Linear(D, F_FF, bias=False)
        self.w_2 = nn.Linear(F_FF, D, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        n = self.norm_1(x)
        h = x + self.mha(n, n, n, mask)[0]
        n = self.norm_2(h)
        return h + self.w_2(F.silu(self.w_1(n)) * self.w_3(n))


def test_layer_with_one_kv_head_per_query_head_equals_the_multi_head_layer() -> None:
    torch.manual_seed(5)
    rope = RotaryEmbedding(D // H)
    ours = ModernDecoderLayer(D, H, H, F_FF, rope=rope).double().eval()
    ref = _ReferenceLayer(rope).double().eval()
    with torch.no_grad():
        for p in ours.parameters():
            p.copy_(torch.randn_like(p))  # also the RMSNorm gains, so they are checked too
        ref.norm_1.weight.copy_(ours.attention_norm.weight)
        ref.norm_2.weight.copy_(ours.ffn_norm.weight)
        for name in ("w_q", "w_k", "w_v", "w_o"):
            getattr(ref.mha, name).weight.copy_(getattr(ours.attention, name).weight)
        for name in ("w_1", "w_2", "w_3"):
            getattr(ref, name).weight.copy_(getattr(ours.ffn, name).weight)
    x = torch.randn(2, 7, D, dtype=torch.float64, requires_grad=True)
    out, weights = ours(x, causal_mask(7))
    expected = ref(x, causal_mask(7))
    assert weights.shape == (2, H, 7, 7)
    assert_close(out, expected, atol=1e-10, rtol=1e-10)
    (grad,) = torch.autograd.grad(out.square().sum(), x)
    (expected_grad,) = torch.autograd.grad(expected.square().sum(), x)
    assert_close(grad, expected_grad, atol=1e-10, rtol=1e-10)


def test_zeroed_sublayers_return_the_input() -> None:
    # Pre-norm: with W_O and W_2 zero both residual branches add nothing, so the layer is the identity.
    layer = ModernDecoderLayer(D, H, 2, F_FF, rope=RotaryEmbedding(D // H)).eval()
    with torch.no_grad():
        layer.attention.w_o.weight.zero_()
        layer.ffn.w_2.weight.zero_()
    x = torch.randn(2, 5, D)
    assert_close(layer(x, causal_mask(5))[0], x, atol=0, rtol=0)


def test_argument_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match=r"d_model: expected a multiple of num_heads \(4\), got 30"):
        ModernDecoderLM(V, 30, 4, 2, 2, 48, max_len=16)
    with pytest.raises(ValueError, match=r"num_kv_heads: expected a divisor of num_heads \(4\), got 3"):
        ModernDecoderLM(V, D, 4, 3, 2, 48, max_len=16)
    with pytest.raises(ValueError, match=r"d_model: expected D / num_heads = Dh even .*got Dh = 5"):
        ModernDecoderLM(V, 20, 4, 2, 2, 48, max_len=16)
    with pytest.raises(ValueError, match=r"d_ff: expected a positive int, got 0"):
        ModernDecoderLM(V, D, H, 2, 2, 0, max_len=16)
    with pytest.raises(TypeError, match=r"num_layers: expected an int, got float"):
        ModernDecoderLM(V, D, H, 2, 2.0, 48, max_len=16)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"max_len: expected an int, got str"):
        ModernDecoderLM(V, D, H, 2, 2, 48, max_len="16")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"vocab_size: expected an int, got bool"):
        modern_lm_parameter_count(True, D, H, 2, 2, 48)  # type: ignore[arg-type]
    model = _model()
    with pytest.raises(TypeError, match=r"tokens: expected an integer tensor .*got torch.float32"):
        model(torch.zeros(1, 3))
    with pytest.raises(ValueError, match=r"tokens: expected shape \(B, L\), got \(3,\)"):
        model(torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match=rf"tokens: expected ids in \[0, V={V}\), got min 0, max {V}"):
        model(torch.tensor([[0, V]]))
    with pytest.raises(ValueError, match=rf"tokens: expected a length L in \[1, max_len={MAX_LEN} - {MAX_LEN - 2} cached\], got 3"):
        cache = model.new_cache()
        model(_tokens(1, MAX_LEN - 2), cache=cache)
        model(_tokens(1, 3), cache=cache)
    with pytest.raises(ValueError, match=rf"cache: expected a list of {LAYERS} KVCache objects .*got 1"):
        model(_tokens(1, 3), cache=model.new_cache()[:1])
    with pytest.raises(TypeError, match=rf"cache: expected a list of {LAYERS} KVCache objects .*got tuple"):
        model(_tokens(1, 3), cache=tuple(model.new_cache()))  # a TypeError, as the 2017 models give
    with pytest.raises(ValueError, match=r"max_new_tokens: expected a non-negative int, got -1"):
        model.generate(_tokens(1, 5), -1)


def test_generate_past_max_len_crops_the_context() -> None:
    torch.manual_seed(0)
    model = _model().eval()
    prompt = _tokens(2, 5)
    out = model.generate(prompt, MAX_LEN)  # 5 + MAX_LEN tokens: past max_len
    tokens = prompt
    for _ in range(MAX_LEN):  # reference: recompute the last max_len tokens every step (nanoGPT)
        logits = model(tokens[:, -MAX_LEN:])[:, -1]
        tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(out, tokens)
