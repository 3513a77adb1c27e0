"""Worked solutions of chapter 01's exercises: each stored digest is the digest of the right answer."""

from __future__ import annotations

import math

import torch
from torch import nn

from tformer.book.exercises import check


def _lstm_parameters(d_in: int, hidden: int) -> int:
    return 4 * hidden * (d_in + hidden + 2)  # four blocks of W_ih, W_hh, b_ih, b_hh


def test_01_1_lstm_parameter_count() -> None:
    answer = _lstm_parameters(10, 20)
    assert answer == sum(p.numel() for p in nn.LSTM(10, 20).parameters())  # the formula agrees with torch
    assert check("01.1", answer)
    assert not check("01.1", answer // 4)  # the plain RNN's count is wrong


def test_01_2_steps_below_one_percent() -> None:
    answer = math.ceil(math.log(0.01) / math.log(0.9))
    assert 0.9**answer < 0.01 <= 0.9 ** (answer - 1)
    assert check("01.2", answer)
    assert not check("01.2", answer - 1)


def test_01_3_scaled_inputs() -> None:
    w_xh = torch.tensor([[0.5, -0.3], [0.2, 0.4]], dtype=torch.float64)
    w_hh = torch.tensor([[0.1, 0.2], [-0.3, 0.1]], dtype=torch.float64)
    b = torch.tensor([0.0, 0.1], dtype=torch.float64)
    h = torch.zeros(2, dtype=torch.float64)
    for x in ([2.0, 0.0], [0.0, 2.0], [2.0, 2.0]):
        h = torch.tanh(w_xh @ torch.tensor(x, dtype=torch.float64) + w_hh @ h + b)
    reference = nn.RNN(2, 2, batch_first=True).double()  # the same recurrence through torch
    with torch.no_grad():
        reference.weight_ih_l0.copy_(w_xh)
        reference.weight_hh_l0.copy_(w_hh)
        reference.bias_ih_l0.copy_(b)
        reference.bias_hh_l0.zero_()
        out, _ = reference(torch.tensor([[[2.0, 0.0], [0.0, 2.0], [2.0, 2.0]]], dtype=torch.float64))
    torch.testing.assert_close(out[0, -1], h, rtol=0, atol=1e-12)
    assert check("01.3", float(h[0]))
    assert not check("01.3", float(h[1]))


def test_01_4_jacobian_at_rest() -> None:
    w_hh = 0.5 * torch.eye(16, dtype=torch.float64)
    answer = float(torch.linalg.matrix_norm(torch.linalg.matrix_power(w_hh, 10), ord=2))
    assert math.isclose(answer, 0.5**10, rel_tol=1e-12)
    assert check("01.4", answer)
    assert not check("01.4", 0.5**9)
