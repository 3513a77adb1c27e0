"""Worked solutions of chapter 14's exercises (the Transformer's new problems), computed independently.

Each stored digest in ``tformer/exercise_answers/14.json`` must accept the right answer and reject a wrong one.
"""

from __future__ import annotations

import math

import pytest

from tformer.book.exercises import check


def solution_1() -> int:
    """KV cache: 2 (K, V) × 40 layers × 4 heads × 32768 positions × 128 × 2 bytes (bfloat16), in MiB."""
    return 2 * 40 * 4 * 32768 * 128 * 2 // 2**20


def solution_2() -> int:
    """Router 64 × 16 (no bias) plus two experts, each W_1 (64 × 256) + b_1 + W_2 (256 × 64) + b_2."""
    expert = 64 * 256 + 256 + 256 * 64 + 64
    return 64 * 16 + 2 * expert


def solution_3() -> int:
    """Each layer adds w − 1 = 4 earlier positions to the one it starts from: 1 + 6·4."""
    field = 1
    for _ in range(6):
        field += 5 - 1
    return field


def solution_4() -> int:
    """The offset doubles each round until it reaches n: ⌈log₂ 5000⌉."""
    return math.ceil(math.log2(5000))


SOLUTIONS = {"14.1": solution_1, "14.2": solution_2, "14.3": solution_3, "14.4": solution_4}

MISTAKES = {
    "14.1": 1280,  # forgetting that both keys and values are cached
    "14.2": 64 * 16 + 16 * (64 * 256 + 256 + 256 * 64 + 64),  # the total, not the active count
    "14.3": 30,  # 6 × w, counting the query's own position in every layer
    "14.4": 5000,  # the sequential loop's step count
}


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_right_answer_is_accepted(exercise_id: str) -> None:
    assert check(exercise_id, SOLUTIONS[exercise_id]()) is True


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_wrong_answer_is_rejected(exercise_id: str) -> None:
    assert check(exercise_id, MISTAKES[exercise_id]) is False
