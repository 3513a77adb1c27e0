"""Worked solutions of chapter 04's exercises, computed independently with plain Python maths.

Each stored digest in ``tformer/exercise_answers/04.json`` must accept the right answer and reject a wrong one.
"""

from __future__ import annotations

import math

import pytest

from tformer.book.exercises import check


def softmax(scores: list[float]) -> list[float]:
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    return [e / sum(exps) for e in exps]


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def solution_1() -> int:
    """W_Q and W_K are 512 × 64, W_V is 512 × 64: three 512·64 matrices."""
    return 512 * 64 + 512 * 64 + 512 * 64


def solution_2() -> float:
    """Q = K = X: 老鼠's row of softmax(X Xᵀ / √2), the weight on itself."""
    x = [[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [1.0, 0.0]]
    return softmax([dot(x[2], other) / math.sqrt(2) for other in x])[2]


def solution_3() -> float:
    """Nails in the basket for the shopping list [0, 3, 0]."""
    signs = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.6, 0.6, 0.2], [0.0, 0.0, 1.0]]
    nails = [0.0, 1.0, 0.2, 0.0]  # the 'nails' column of the shelves
    return dot(softmax([dot(s, [0.0, 3.0, 0.0]) / math.sqrt(3) for s in signs]), nails)


SOLUTIONS = {"04.1": solution_1, "04.2": solution_2, "04.3": solution_3}


def test_solution_2_by_hand() -> None:
    # Scores of 老鼠 against 猫, 追, 老鼠, 它: 0.7, 0.7, 0.98, 0.7, each divided by √2.
    e_other, e_self = math.exp(0.7 / math.sqrt(2)), math.exp(0.98 / math.sqrt(2))
    assert solution_2() == pytest.approx(e_self / (3 * e_other + e_self), abs=1e-12)


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_right_answer_is_accepted(exercise_id: str) -> None:
    assert check(exercise_id, SOLUTIONS[exercise_id]()) is True


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_wrong_answer_is_rejected(exercise_id: str) -> None:
    assert check(exercise_id, SOLUTIONS[exercise_id]() + 1) is False
