"""Tests for tformer.variants.moe (mixture of experts), against a dense evaluation of every expert.

"""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from tformer.variants.moe import MixtureOfExperts, load_balancing_loss

TOL = {torch.float64: {"atol": 1e-10, "rtol": 1e-10}, torch.float32: {"atol": 1e-6, "rtol": 1e-6}}


# -------------------------------------------------------------------------------------- mixture of experts
@pytest.mark.parametrize("top_k", [1, 2, 3])
def test_moe_routes_each_token_to_exactly_k_experts_and_matches_dense(top_k: int) -> None:
    torch.manual_seed(6)
    D, F, E = 8, 16, 4
    moe = MixtureOfExperts(D, F, E, top_k).double()
    x = torch.randn(3, 5, D, dtype=torch.float64)
    gates, indices, probs = moe.route(x)
    assert indices.shape == gates.shape == (3, 5, top_k)
    assert all(len(set(row.tolist())) == top_k for row in indices.view(-1, top_k))
    # the chosen experts are the k most probable ones
    assert_close(probs.gather(-1, indices), probs.topk(top_k, dim=-1).values)
    if top_k > 1:
        assert_close(gates.sum(-1), torch.ones(3, 5, dtype=torch.float64))
    else:
        assert_close(gates[..., 0], probs.max(dim=-1).values)
    every_expert = torch.stack([expert(x) for expert in moe.experts], dim=-2)  # (B, L, E, D)
    chosen = every_expert.gather(-2, indices[..., None].expand(-1, -1, -1, D))  # (B, L, k, D)
    expected = (gates[..., None] * chosen).sum(dim=-2)
    assert_close(moe(x), expected, **TOL[torch.float64])


def test_moe_parameter_counts() -> None:
    D, F, E, k = 8, 32, 6, 2
    moe = MixtureOfExperts(D, F, E, k)
    expert = 2 * D * F + F + D  # W_1, b_1, W_2, b_2
    assert moe.total_parameters == D * E + E * expert
    assert moe.active_parameters == D * E + k * expert
    assert sum(p.numel() for p in moe.parameters()) == moe.total_parameters


def test_moe_gradients_reach_router_and_bad_arguments() -> None:
    moe = MixtureOfExperts(4, 8, 3, 1)
    moe(torch.randn(2, 3, 4)).sum().backward()
    assert moe.router.weight.grad is not None and bool(moe.router.weight.grad.abs().sum() > 0)
    with pytest.raises(ValueError, match="top_k"):
        MixtureOfExperts(4, 8, 2, 3)
    with pytest.raises(ValueError, match="positive"):
        MixtureOfExperts(4, 8, 0, 1)
    with pytest.raises(ValueError, match="x"):
        moe(torch.randn(2, 3, 5))


def test_load_balancing_loss_is_one_when_uniform() -> None:
    E = 4
    probs = torch.full((8, E), 1.0 / E)
    indices = torch.arange(8).remainder(E)[:, None]
    assert_close(load_balancing_loss(probs, indices, E), torch.tensor(1.0))
    skewed = torch.tensor([[0.7, 0.1, 0.1, 0.1]]).expand(8, E)
    assert float(load_balancing_loss(skewed, torch.zeros(8, 1, dtype=torch.long), E)) == pytest.approx(2.8)
    with pytest.raises(ValueError):
        load_balancing_loss(probs, indices, 3)


# --- regressions found by the hostile review ---------------------------------------------------------------




def test_load_balancing_loss_refuses_empty_inputs() -> None:  # breaker 14: used to return NaN
    with pytest.raises(ValueError, match=r"probs: expected at least one token, got shape \(0, 4\)"):
        load_balancing_loss(torch.zeros(0, 4), torch.zeros(0, 2, dtype=torch.long), 4)
    with pytest.raises(ValueError, match=r"indices: expected at least one token, got shape \(0, 2\)"):
        load_balancing_loss(torch.full((3, 4), 0.25), torch.zeros(0, 2, dtype=torch.long), 4)


def test_load_balancing_loss_refuses_another_token_count() -> None:
    probs = torch.softmax(torch.randn(2, 5, 4), dim=-1)  # (B, L, E)
    indices = probs.topk(2, dim=-1).indices  # (B, L, k)
    with pytest.raises(ValueError, match=r"indices: expected the tokens of probs, shape \(2, 5, k\), got \(2, 3, 2\)"):
        load_balancing_loss(probs, indices[:, :3], 4)  # f_e over 6 tokens, P_e over 10: a meaningless product
    assert load_balancing_loss(probs, indices, 4).item() > 0
