"""Worked solutions of chapter 13's exercises (complexity), computed from first principles in plain Python.

Each stored digest in ``tformer/exercise_answers/13.json`` must accept the right answer and reject a wrong one.
"""

from __future__ import annotations

import pytest
import torch

from tformer.book.exercises import check


def solution_1() -> int:
    """LSTM, d = 128, n = 50: per step 4 gates × two (1 × 128)(128 × 128) products of 2·128·128 FLOPs."""
    per_step = 4 * (2 * 128 * 128 + 2 * 128 * 128)
    return 50 * per_step


def solution_2() -> int:
    """GPT-2 medium, 24 layers × 16 heads × 1024² weights × 2 bytes (float16), in MiB."""
    return 24 * 16 * 1024 * 1024 * 2 // 2**20


def solution_3() -> list[int]:
    """k = 5, n = 100: contiguous layers until 1 + ℓ·4 ≥ 100; dilated layers until 5^ℓ ≥ 100."""
    contiguous = next(layers for layers in range(1, 1000) if 1 + layers * (5 - 1) >= 100)
    dilated = next(layers for layers in range(1, 100) if 5**layers >= 100)
    return [contiguous, dilated]


def solution_4() -> int:
    """d = 512: the largest n with 4n²d + 8nd² < 12nd² (a GRU layer: three gates), found by search."""
    d = 512
    return max(n for n in range(1, 4 * d) if 4 * n * n * d + 8 * n * d * d < 12 * n * d * d)


SOLUTIONS = {"13.1": solution_1, "13.2": solution_2, "13.3": solution_3, "13.4": solution_4}

MISTAKES = {
    "13.1": 4 * 50 * 128 * 128,  # an Elman RNN's count, forgetting the four gates
    "13.2": 1536,  # float32 instead of float16
    "13.3": [50, 3],  # counting k instead of k − 1 new positions per layer
    "13.4": 512,  # equality, not strictly cheaper
}


def test_solutions_are_the_expected_closed_forms() -> None:
    assert solution_1() == 16 * 50 * 128**2
    assert solution_3() == [25, 3]
    assert solution_2() == 768
    assert solution_4() == 512 - 1


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_right_answer_is_accepted(exercise_id: str) -> None:
    assert check(exercise_id, SOLUTIONS[exercise_id]()) is True


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_wrong_answer_is_rejected(exercise_id: str) -> None:
    assert check(exercise_id, MISTAKES[exercise_id]) is False


def test_solutions_agree_with_the_package() -> None:
    from tformer.analysis.complexity import attention_matrix_bytes, rnn_flops, self_attention_flops

    assert attention_matrix_bytes(1024, num_heads=16, num_layers=24, dtype=torch.float16) // 2**20 == solution_2()
    n = solution_4()
    assert self_attention_flops(n, 512, projections=True) < rnn_flops(n, 512, gates=3)
    assert self_attention_flops(n + 1, 512, projections=True) >= rnn_flops(n + 1, 512, gates=3)
