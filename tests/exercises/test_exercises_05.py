"""Worked solutions of chapter 05's exercises, computed independently with plain Python maths.

Each stored digest in ``tformer/exercise_answers/05.json`` must accept the right answer and reject a wrong one.
"""

from __future__ import annotations

import math

import pytest

from tformer.book.exercises import check

KEYS = [[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [1.0, 0.0]]  # 猫 追 老鼠 它
VALUES = [[2.0, 1.0], [0.0, 3.0], [1.0, 2.0], [0.0, 0.0]]


def attention_weights(query: list[float]) -> list[float]:
    exps = [math.exp((query[0] * k[0] + query[1] * k[1]) / math.sqrt(2)) for k in KEYS]
    return [e / sum(exps) for e in exps]


def solution_1() -> float:
    """Weight on 追 for the query [0, 1]."""
    return attention_weights([0.0, 1.0])[1]


def solution_2() -> list[float]:
    """Output for the query [0, 1]: the weighted sum of the values."""
    w = attention_weights([0.0, 1.0])
    return [sum(wi * v[i] for wi, v in zip(w, VALUES, strict=True)) for i in range(2)]


def solution_3() -> float:
    """Raw scores [3, 1], d_k = 16: softmax([3/4, 1/4])[0] = 1 / (1 + e^(-1/2))."""
    return 1 / (1 + math.exp(-(3 - 1) / 4))


SOLUTIONS = {"05.1": solution_1, "05.2": solution_2, "05.3": solution_3}


def test_the_chapter_example_matches_the_hand_calculation() -> None:
    # The worked example of the chapter (query [1, 0]) to four decimals, as a check of the helper above.
    w = attention_weights([1.0, 0.0])
    assert [round(x, 4) for x in w] == [0.3029, 0.1493, 0.2450, 0.3029]


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_right_answer_is_accepted(exercise_id: str) -> None:
    assert check(exercise_id, SOLUTIONS[exercise_id]()) is True


# Typical slips: forgetting the √d_k, rounding every step, dividing by d_k.
MISTAKES = {
    "05.1": math.exp(1) / (2 + math.exp(1) + math.exp(0.7)),  # no scaling
    "05.2": [0.64, 1.83],  # rounded to two decimals
    "05.3": 1 / (1 + math.exp(-(3 - 1) / 16)),  # divided by d_k instead of √d_k
}


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_wrong_answer_is_rejected(exercise_id: str) -> None:
    assert check(exercise_id, MISTAKES[exercise_id]) is False
