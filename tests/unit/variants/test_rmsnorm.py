"""RMSNorm against torch.nn.RMSNorm (weights copied, outputs and gradients) and the closed form on [1, 2, 3, 4]."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from tformer.variants.rmsnorm import RMSNorm

TOL = {torch.float64: {"atol": 1e-12, "rtol": 1e-12}, torch.float32: {"atol": 1e-6, "rtol": 1e-6}}


def _pair(D: int, eps: float | None, dtype: torch.dtype) -> tuple[RMSNorm, nn.RMSNorm]:
    ours, ref = RMSNorm(D, eps=eps).to(dtype), nn.RMSNorm(D, eps=eps, dtype=dtype)
    with torch.no_grad():
        ours.weight.copy_(torch.randn(D, generator=torch.Generator().manual_seed(D), dtype=dtype))
        ref.weight.copy_(ours.weight)
    return ours, ref


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("eps", [None, 1e-6, 0.5])
@pytest.mark.parametrize("shape", [(2, 7, 32), (5, 12), (12,)])
def test_rmsnorm_equals_torch_outputs_and_gradients(dtype: torch.dtype, eps: float | None, shape: tuple) -> None:
    torch.manual_seed(0)
    ours, ref = _pair(shape[-1], eps, dtype)
    x = (3.0 * torch.randn(shape, dtype=dtype)).requires_grad_()
    x_ref = x.detach().clone().requires_grad_()
    out, expected = ours(x), ref(x_ref)
    assert out.dtype == dtype and out.shape == x.shape
    assert_close(out, expected, **TOL[dtype])
    grad = torch.randn_like(out)
    out.backward(grad)
    expected.backward(grad)
    assert_close(x.grad, x_ref.grad, **TOL[dtype])
    assert_close(ours.weight.grad, ref.weight.grad, **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rmsnorm_low_precision_is_torchs_within_one_rounding(dtype: torch.dtype) -> None:
    torch.manual_seed(1)
    ours, ref = _pair(16, None, dtype)
    x = torch.randn(4, 16, dtype=dtype)
    out = ours(x)
    assert out.dtype == dtype
    step = torch.finfo(dtype).eps  # one unit in the last place at 1: the rounding of the result
    assert_close(out.float(), ref(x).float(), atol=4 * step, rtol=2 * step)


def test_rmsnorm_divides_by_the_root_mean_square_by_hand() -> None:
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)  # mean(x²) = (1 + 4 + 9 + 16) / 4 = 7.5
    out = RMSNorm(4, eps=1e-300).double()(x)  # 7.5 + 1e-300 == 7.5 in float64: the formula without eps
    assert_close(out, x / math.sqrt(7.5), atol=1e-15, rtol=0.0)
    assert_close(out.pow(2).mean(), torch.tensor(1.0, dtype=torch.float64), atol=1e-15, rtol=0.0)
    # eps is added to the mean square inside the root (torch's meaning), not to the root
    out_eps = RMSNorm(4, eps=1.0).double()(x)
    assert_close(out_eps, x / math.sqrt(7.5 + 1.0), atol=1e-15, rtol=0.0)
    # the default eps is the machine epsilon of the computation dtype, as in torch
    tiny = torch.full((4,), 1e-5, dtype=torch.float32)  # mean square 1e-10, comparable to float32's eps 1.2e-7
    assert_close(RMSNorm(4)(tiny), tiny / math.sqrt(1e-10 + torch.finfo(torch.float32).eps), atol=0, rtol=1e-6)


def test_rmsnorm_has_no_bias_and_no_mean_subtraction() -> None:
    norm = RMSNorm(8)
    assert [name for name, _ in norm.named_parameters()] == ["weight"]
    x = torch.full((8,), 5.0)  # LayerNorm would give zeros (x minus its mean); RMSNorm gives ones
    assert_close(norm(x), torch.ones(8), atol=1e-6, rtol=0.0)


def test_rmsnorm_errors() -> None:
    with pytest.raises(ValueError, match=r"d_model: expected a positive int, got 0"):
        RMSNorm(0)
    with pytest.raises(ValueError, match=r"eps: expected a finite float > 0 or None \(0 gives NaN on an all-zero row\), got -1.0"):
        RMSNorm(4, eps=-1.0)
    with pytest.raises(TypeError, match=r"eps: expected a float > 0 or None, got str"):
        RMSNorm(4, eps="1e-5")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"x: expected shape \(\.\.\., D=4\), got \(2, 5\)"):
        RMSNorm(4)(torch.randn(2, 5))
    with pytest.raises(TypeError, match=r"x: expected a floating-point tensor \(\.\.\., D\), got torch.int64"):
        RMSNorm(4)(torch.ones(2, 4, dtype=torch.long))


def test_half_input_with_a_float32_gain_returns_half_like_torch() -> None:  # breaker 13
    import warnings

    torch.manual_seed(0)
    ours, theirs = RMSNorm(8), torch.nn.RMSNorm(8)
    with torch.no_grad():
        ours.weight.uniform_(0.5, 1.5)
        theirs.weight.copy_(ours.weight)
    x = torch.randn(3, 5, 8).half()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that it cannot use its fused kernel for mixed dtypes
        expected = theirs(x)
    got = ours(x)
    assert got.dtype == expected.dtype == torch.float16
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("eps", [0.0, math.inf, math.nan])
def test_rmsnorm_refuses_an_eps_that_gives_nan_on_a_zero_row(eps: float) -> None:
    assert not RMSNorm(4)(torch.zeros(2, 4)).isnan().any()  # the default eps keeps a zero row at zero
    with pytest.raises(ValueError, match=r"eps: expected a finite float > 0 or None"):
        RMSNorm(4, eps=eps)  # eps = 0 gave 0 / √0 = NaN on an all-zero row
