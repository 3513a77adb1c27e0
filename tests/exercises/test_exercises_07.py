"""Chapter 07 exercises: every stored answer digest is the digest of an independently computed solution."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from tformer.book.exercises import check


def solution_07_1() -> int:
    reference = nn.MultiheadAttention(768, 12)  # torch's module: in_proj (3D × D + 3D) + out_proj (D × D + D)
    return sum(p.numel() for p in reference.parameters())


def solution_07_2() -> int:
    B, H, L, S = 2, 8, 5, 7
    return B * H * L * S


def solution_07_3() -> int:
    L, D = 64, 256
    return 8 * L * D**2 + 4 * L**2 * D


def solution_07_4() -> float:
    # A decoder layer of the base Transformer: self-attention, cross-attention and the FFN (LayerNorms ignored).
    D, F = 512, 2048
    ffn = sum(p.numel() for p in nn.Sequential(nn.Linear(D, F), nn.Linear(F, D)).parameters())
    attention = sum(p.numel() for p in nn.MultiheadAttention(D, 8).parameters())
    return ffn / (ffn + 2 * attention)


SOLUTIONS = {"07.1": solution_07_1, "07.2": solution_07_2, "07.3": solution_07_3, "07.4": solution_07_4}
WRONG = {"07.1": 4 * 768**2, "07.2": 2 * 5 * 7, "07.3": 8 * 64 * 256**2, "07.4": 0.67}  # 07.4: the encoder layer's share


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_solution_is_accepted_and_a_wrong_answer_is_not(exercise_id: str) -> None:
    assert check(exercise_id, SOLUTIONS[exercise_id]()) is True
    assert check(exercise_id, WRONG[exercise_id]) is False


def test_flop_formula_matches_torchs_counter_on_torchs_module() -> None:
    module = nn.MultiheadAttention(256, 4, batch_first=True)
    x = torch.randn(1, 64, 256)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        module(x, x, x, need_weights=True, average_attn_weights=False)  # the explicit, countable path
    assert counter.get_total_flops() == solution_07_3()


def test_closed_forms() -> None:
    assert solution_07_1() == 4 * 768**2 + 4 * 768
    assert round(solution_07_4(), 2) == 0.5
