"""Chapter 08 exercises: every stored answer digest is the digest of an independently computed solution."""

from __future__ import annotations

import math

import pytest
import torch

from tformer.book.exercises import check
from tformer.positional import RotaryEmbedding, sinusoidal_positional_encoding


def solution_08_1() -> int:
    d_model, i = 768, 383
    omega = 10000.0 ** (-2 * i / d_model)
    return round(2 * math.pi / omega)


def solution_08_2() -> float:
    head_dim, j, m = 64, 1, 5
    return m * 10000.0 ** (-2 * j / head_dim)


def solution_08_3() -> float:
    H, h = 16, 5
    return 2.0 ** (-8 * h / H)


SOLUTIONS = {"08.1": solution_08_1, "08.2": solution_08_2, "08.3": solution_08_3}
WRONG = {"08.1": 60611, "08.2": 5.0, "08.3": 0.125}


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_solution_is_accepted_and_a_wrong_answer_is_not(exercise_id: str) -> None:
    assert check(exercise_id, SOLUTIONS[exercise_id]()) is True
    assert check(exercise_id, WRONG[exercise_id]) is False


def test_rope_angle_matches_the_module() -> None:
    # Put a unit vector in pair j = 1 (features 1 and 1 + Dh/2) and read the angle RoPE gives it at m = 5.
    x = torch.zeros(1, 64, dtype=torch.float64)
    x[0, 1] = 1.0
    rotated = RotaryEmbedding(64)(x, torch.tensor([5]))
    angle = solution_08_2()
    assert rotated[0, 1].item() == pytest.approx(math.cos(angle), abs=1e-12)
    assert rotated[0, 33].item() == pytest.approx(math.sin(angle), abs=1e-12)


def test_slowest_hand_period_matches_the_table() -> None:
    # Column 2i of the table is sin(pos · ω); one period later it repeats.
    period = 2 * math.pi / 10000.0 ** (-766 / 768)
    pe = sinusoidal_positional_encoding(3, 768, dtype=torch.float64)
    assert pe[1, 766].item() == pytest.approx(math.sin(2 * math.pi / period), abs=1e-12)
    assert abs(period - solution_08_1()) < 0.5
