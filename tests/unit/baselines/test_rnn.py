"""Tests for tformer.baselines.rnn (RNN/LSTM/GRU from their equations).

References are torch's own modules with the weights copied across, and torch.autograd.functional.jacobian.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from tformer.baselines.rnn import GRU, LSTM, RNN, count_parameters, hidden_state_jacobian_norms

TOL = {torch.float64: {"atol": 1e-10, "rtol": 1e-10}, torch.float32: {"atol": 1e-6, "rtol": 1e-6}}

# (our class, torch class, extra kwargs for both)
CELLS = [
    pytest.param(RNN, nn.RNN, {"nonlinearity": "tanh"}, id="rnn-tanh"),
    pytest.param(RNN, nn.RNN, {"nonlinearity": "relu"}, id="rnn-relu"),
    pytest.param(LSTM, nn.LSTM, {}, id="lstm"),
    pytest.param(GRU, nn.GRU, {}, id="gru"),
]


def _initial_state(torch_cls: type, num_layers: int, B: int, H: int, dtype: torch.dtype):
    h0 = torch.randn(num_layers, B, H, dtype=dtype, requires_grad=True)
    if torch_cls is nn.LSTM:
        return h0, torch.randn(num_layers, B, H, dtype=dtype, requires_grad=True)
    return h0


def _flat(state) -> list[torch.Tensor]:
    return list(state) if isinstance(state, tuple) else [state]


@pytest.mark.parametrize(("ours_cls", "torch_cls", "kwargs"), CELLS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize("num_layers", [1, 2])
def test_parity_with_torch(ours_cls, torch_cls, kwargs, dtype, with_state, num_layers):
    torch.manual_seed(0)
    B, L, D_in, H = 3, 5, 4, 6
    ref = torch_cls(D_in, H, num_layers=num_layers, batch_first=True, **kwargs).to(dtype)
    ours = ours_cls.from_torch(ref)
    assert isinstance(ours, ours_cls)
    assert {n: p.dtype for n, p in ours.named_parameters()} == {n: p.dtype for n, p in ref.named_parameters()}

    x = torch.randn(B, L, D_in, dtype=dtype, requires_grad=True)
    state = _initial_state(torch_cls, num_layers, B, H, dtype) if with_state else None
    out_ref, final_ref = ref(x, state)
    out, final = ours(x, state)
    tol = TOL[dtype]
    assert out.shape == (B, L, H)
    assert_close(out, out_ref, **tol)
    for ours_s, ref_s in zip(_flat(final), _flat(final_ref), strict=True):
        assert ours_s.shape == (num_layers, B, H)
        assert_close(ours_s, ref_s, **tol)

    # Gradients w.r.t. the input, the initial state and every parameter agree too.
    weights = torch.randn_like(out)
    loss_terms = [(out * weights).sum()] + [s.sin().sum() for s in _flat(final)]
    wrt_ref = [x, *(_flat(state) if with_state else []), *ref.parameters()]
    wrt_ours = [x, *(_flat(state) if with_state else []), *ours.parameters()]
    loss_ref = (out_ref * weights).sum() + sum(s.sin().sum() for s in _flat(final_ref))
    grads_ref = torch.autograd.grad(loss_ref, wrt_ref)
    grads = torch.autograd.grad(sum(loss_terms), wrt_ours)
    assert len(grads) == len(grads_ref)
    for g, g_ref in zip(grads, grads_ref, strict=True):
        assert_close(g, g_ref, **tol)


def test_from_torch_copies_rather_than_shares_weights():
    ref = nn.GRU(3, 4, batch_first=True)
    ours = GRU.from_torch(ref)
    with torch.no_grad():
        ours.weight_hh_l0.add_(1.0)
    assert not torch.equal(ours.weight_hh_l0, ref.weight_hh_l0)


def test_parameter_counts_are_4x_and_3x_a_plain_rnn():
    D_in, H = 7, 5
    rnn, lstm, gru = RNN(D_in, H), LSTM(D_in, H), GRU(D_in, H)
    expected_rnn = H * (D_in + H + 2)  # W_ih, W_hh, two biases
    assert count_parameters(rnn) == expected_rnn
    assert count_parameters(lstm) == 4 * expected_rnn
    assert count_parameters(gru) == 3 * expected_rnn
    for ours, ref in ((rnn, nn.RNN(D_in, H)), (lstm, nn.LSTM(D_in, H)), (gru, nn.GRU(D_in, H))):
        assert count_parameters(ours) == count_parameters(ref)


@pytest.mark.parametrize("cls", [RNN, LSTM, GRU])
def test_bad_inputs_raise_named_errors(cls):
    cell = cls(4, 3)
    with pytest.raises(TypeError, match=r"input: expected a floating-point tensor \(B, L, D_in\), got torch.int64"):
        cell(torch.ones(2, 5, 4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"input: expected shape \(B, L, D_in=4\) with L >= 1, got \(2, 5, 7\)"):
        cell(torch.ones(2, 5, 7))
    with pytest.raises(ValueError, match=r"input: expected shape \(B, L, D_in=4\) with L >= 1, got \(5, 4\)"):
        cell(torch.ones(5, 4))
    with pytest.raises(TypeError, match=r"input: expected the dtype of the parameters \(torch\.float32\), got torch\.float64"):
        cell(torch.ones(2, 5, 4, dtype=torch.float64))
    bad_h = torch.zeros(1, 3, 3)  # batch 3, input batch 2
    state = (bad_h, bad_h) if cls is LSTM else bad_h
    with pytest.raises(ValueError, match=r"(state|h_0): expected shape \(num_layers=1, B=2, H_hid=3\), got \(1, 3, 3\)"):
        cell(torch.ones(2, 5, 4), state)
    with pytest.raises(ValueError, match="hidden_size: expected a positive int"):
        cls(4, 0)


def test_from_torch_rejects_mismatched_modules():
    with pytest.raises(TypeError, match=r"module: expected torch.nn.LSTM, got GRU"):
        LSTM.from_torch(nn.GRU(3, 4))
    with pytest.raises(ValueError, match="bidirectional"):
        GRU.from_torch(nn.GRU(3, 4, bidirectional=True))
    with pytest.raises(ValueError, match="proj_size"):
        LSTM.from_torch(nn.LSTM(3, 4, proj_size=2))


# --- Jacobian norms ------------------------------------------------------------------------------------------


def _h_T_from_state(cell, x: torch.Tensor, t: int, v: torch.Tensor) -> torch.Tensor:
    """h_T as a function of the flattened state s_t (t = 1..T), by running steps t+1..T of the full forward."""
    H = cell.hidden_size
    rest = x[:, t:]  # x_{t+1} … x_T
    if isinstance(cell, LSTM):
        state = (v[:H].view(1, 1, H), v[H:].view(1, 1, H))
    else:
        state = v.view(1, 1, H)
    if rest.shape[1] == 0:
        return v[:H]
    _, final = cell(rest, state)
    h = final[0] if isinstance(final, tuple) else final
    return h.reshape(H)


@pytest.mark.parametrize("cls", [RNN, LSTM, GRU])
@pytest.mark.parametrize("norm", ["spectral", "fro"])
def test_jacobian_norms_match_autograd(cls, norm):
    torch.manual_seed(1)
    T, D_in, H = 6, 3, 4
    cell = cls(D_in, H).double()
    x = torch.randn(1, T, D_in, dtype=torch.float64)
    h0 = torch.randn(1, 1, H, dtype=torch.float64)
    state = (h0, torch.randn(1, 1, H, dtype=torch.float64)) if cls is LSTM else h0
    got = hidden_state_jacobian_norms(cell, x[0], state, norm=norm)
    assert got.shape == (T,)

    # Reference: collect s_1..s_T by running prefixes, then differentiate the rest of the run end to end.
    expected = []
    for t in range(1, T + 1):
        _, s_t = cell(x[:, :t], state)
        v = torch.cat([s.reshape(H) for s in _flat(s_t)])
        jac = torch.autograd.functional.jacobian(lambda v, t=t: _h_T_from_state(cell, x, t, v), v)
        n = 2 * H if cls is LSTM else H
        assert jac.shape == (H, n)
        expected.append(torch.linalg.matrix_norm(jac, ord=2 if norm == "spectral" else "fro"))
    assert_close(got, torch.stack(expected), atol=1e-10, rtol=1e-10)
    assert all(p.grad is None for p in cell.parameters())


def test_jacobian_norms_vanish_for_small_weights_and_closed_form_for_linear_rnn():
    # A ReLU RNN with W_hh = a·I, zero biases and positive pre-activations is linear: ∂h_T/∂h_t = a^(T−t) I.
    T, H, a = 8, 3, 0.5
    cell = RNN(1, H, nonlinearity="relu").double()
    with torch.no_grad():
        cell.weight_ih_l0.fill_(1.0)
        cell.weight_hh_l0.copy_(a * torch.eye(H, dtype=torch.float64))
        cell.bias_ih_l0.zero_()
        cell.bias_hh_l0.zero_()
    x = torch.ones(T, 1, dtype=torch.float64)
    distances = torch.arange(T - 1, -1, -1, dtype=torch.float64)
    assert_close(hidden_state_jacobian_norms(cell, x), a**distances, atol=1e-12, rtol=1e-12)
    fro = hidden_state_jacobian_norms(cell, x, norm="fro")
    assert_close(fro, a**distances * H**0.5, atol=1e-12, rtol=1e-12)


def test_jacobian_norms_bad_arguments():
    with pytest.raises(ValueError, match="num_layers=1"):
        hidden_state_jacobian_norms(GRU(2, 3, num_layers=2), torch.randn(4, 2))
    with pytest.raises(ValueError, match="norm"):
        hidden_state_jacobian_norms(GRU(2, 3), torch.randn(4, 2), norm="nuclear")
    with pytest.raises(ValueError, match=r"inputs: expected \(L, D_in\) or \(1, L, D_in\)"):
        hidden_state_jacobian_norms(GRU(2, 3), torch.randn(2, 4, 2))
    with pytest.raises(TypeError, match="cell"):
        hidden_state_jacobian_norms(nn.GRU(2, 3), torch.randn(4, 2))


