"""SwiGLU feed-forward against its formula (outputs and gradients) and the parameter-matched width against
Llama's published widths and the 2017 FFN's parameter count."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from tformer.layers import FeedForward
from tformer.variants.swiglu import SwiGLUFeedForward, swiglu_hidden_width

TOL = {torch.float64: {"atol": 1e-12, "rtol": 1e-12}, torch.float32: {"atol": 1e-5, "rtol": 1e-5}}


def _formula(x, w1, w3, w2, b1=None, b3=None, b2=None):
    """(SiLU(x W_1) ⊙ x W_3) W_2 written out with matmuls (weights stored (out, in), as nn.Linear does)."""
    gate, value = x @ w1.T, x @ w3.T
    if b1 is not None:
        gate, value = gate + b1, value + b3
    out = (F.silu(gate) * value) @ w2.T
    return out if b2 is None else out + b2


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("bias", [False, True])
def test_swiglu_equals_its_formula_outputs_and_gradients(dtype: torch.dtype, bias: bool) -> None:
    torch.manual_seed(0)
    ffn = SwiGLUFeedForward(32, 40, bias=bias).to(dtype)
    x = torch.randn(3, 7, 32, dtype=dtype, requires_grad=True)
    params = [p.detach().clone().requires_grad_() for p in (ffn.w_1.weight, ffn.w_3.weight, ffn.w_2.weight)]
    biases = [b.detach().clone().requires_grad_() for b in (ffn.w_1.bias, ffn.w_3.bias, ffn.w_2.bias)] if bias else []
    x_ref = x.detach().clone().requires_grad_()
    out, expected = ffn(x), _formula(x_ref, *params, *biases)
    assert out.shape == (3, 7, 32) and out.dtype == dtype
    assert_close(out, expected, **TOL[dtype])
    grad = torch.randn_like(out)
    out.backward(grad)
    expected.backward(grad)
    assert_close(x.grad, x_ref.grad, **TOL[dtype])
    for module_param, ref_param in zip((ffn.w_1.weight, ffn.w_3.weight, ffn.w_2.weight), params, strict=True):
        assert_close(module_param.grad, ref_param.grad, **TOL[dtype])
    if bias:
        assert_close(ffn.w_1.bias.grad, biases[0].grad, **TOL[dtype])


def test_swiglu_has_no_biases_by_default_and_three_matrices() -> None:
    ffn = SwiGLUFeedForward(16, 48)
    assert sorted(name for name, _ in ffn.named_parameters()) == ["w_1.weight", "w_2.weight", "w_3.weight"]
    assert sum(p.numel() for p in ffn.parameters()) == 3 * 16 * 48


def test_swiglu_gate_is_silu_not_relu() -> None:
    ffn = SwiGLUFeedForward(1, 1).double()
    with torch.no_grad():
        for w in (ffn.w_1.weight, ffn.w_3.weight, ffn.w_2.weight):
            w.fill_(1.0)
    x = torch.tensor([[-1.0], [2.0]], dtype=torch.float64)
    # silu(z) · z = z² σ(z): 1/(1 + e) at z = -1 (ReLU would give 0), 4 σ(2) at z = 2
    assert_close(ffn(x), x**2 * torch.sigmoid(x), atol=1e-15, rtol=0.0)


@pytest.mark.parametrize(("d_model", "width"), [(4096, 11008), (5120, 13824), (6656, 17920), (8192, 22016)])
def test_hidden_width_matches_llamas_published_widths(d_model: int, width: int) -> None:
    """The FFN widths of LLaMA 7B, 13B, 33B and 65B (Touvron et al. 2023, released configs: intermediate_size)."""
    assert swiglu_hidden_width(d_model) == width


def test_hidden_width_truncates_two_thirds_then_rounds_up_by_hand() -> None:
    # 8·32/3 = 85.3 → 85; 8·100/3 = 266.7 → 266 (Llama's int() truncates); then up to a multiple
    assert [swiglu_hidden_width(32, m) for m in (1, 8, 256)] == [85, 88, 256]
    assert [swiglu_hidden_width(100, m) for m in (1, 8, 64)] == [266, 272, 320]
    assert swiglu_hidden_width(1, 1) == 2  # 8/3 = 2.7 → 2


@pytest.mark.parametrize("d_model", [1, 2, 32, 64, 100, 384])
@pytest.mark.parametrize("multiple_of", [1, 8, 64, 256])
def test_swiglu_parameters_match_the_2017_ffn_within_one_rounding_step(d_model: int, multiple_of: int) -> None:
    d_ff = swiglu_hidden_width(d_model, multiple_of)
    assert d_ff % multiple_of == 0 and d_ff >= 1
    swiglu = sum(p.numel() for p in SwiGLUFeedForward(d_model, d_ff).parameters())  # 3·D·F
    classic = sum(p.numel() for p in FeedForward(d_model, 4 * d_model, bias=False).parameters())  # 2·D·4D
    assert classic == 8 * d_model**2 and swiglu == 3 * d_model * d_ff
    # ⌊8D/3⌋ loses under one hidden unit (3D weights), rounding up adds under one step (3D·multiple_of)
    assert -3 * d_model < swiglu - classic < 3 * d_model * multiple_of
    if multiple_of == 1 and d_model % 3 == 0:
        assert swiglu == classic  # F = 8D/3 exactly


def test_swiglu_errors() -> None:
    with pytest.raises(ValueError, match=r"d_ff: expected a positive int, got 0"):
        SwiGLUFeedForward(8, 0)
    with pytest.raises(TypeError, match=r"d_model: expected an int, got float"):
        swiglu_hidden_width(8.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"multiple_of: expected a positive int, got 0"):
        swiglu_hidden_width(8, 0)
    ffn = SwiGLUFeedForward(8, 16)
    with pytest.raises(ValueError, match=r"x: expected shape \(\.\.\., D=8\), got \(2, 7\)"):
        ffn(torch.randn(2, 7))
    with pytest.raises(TypeError, match=r"x: expected the dtype of the parameters \(torch.float32\), got torch.float64"):
        ffn(torch.randn(2, 8, dtype=torch.float64))
