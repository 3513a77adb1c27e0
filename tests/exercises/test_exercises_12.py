"""Chapter 12 exercises: every stored answer digest is the digest of an independently computed solution."""

from __future__ import annotations

import math

import pytest
import torch

from tformer.book.exercises import check


def solution_11_1() -> int:
    L = 8
    bidirectional = L * L
    causal = sum(1 for i in range(L) for j in range(L) if j <= i)
    return bidirectional - causal


def solution_11_2() -> float:
    return 2.0 / math.log(2)  # ln x = log2(x) · ln 2, so nats / ln 2 = bits


def solution_11_3() -> float:
    logits, T = torch.tensor([2.0, 1.0, 0.0], dtype=torch.float64), 0.5
    return float(torch.softmax(logits / T, dim=0)[0])


def solution_11_4() -> float:
    prompt, new = 20, 100
    without = sum(prompt + k for k in range(new))  # step k feeds the prompt and the k tokens made so far
    with_cache = prompt + (new - 1)  # the prompt once, then one token per later step
    return without / with_cache


SOLUTIONS = {"12.1": solution_11_1, "12.2": solution_11_2, "12.3": solution_11_3, "12.4": solution_11_4}


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_solution_is_accepted_and_a_wrong_answer_is_not(exercise_id: str) -> None:
    answer = SOLUTIONS[exercise_id]()
    assert check(exercise_id, answer) is True
    assert check(exercise_id, answer + 1) is False


def test_solutions_match_closed_forms() -> None:
    assert solution_11_1() == 8 * 8 - 8 * 9 // 2
    assert solution_11_3() == pytest.approx(math.exp(4) / (math.exp(4) + math.exp(2) + 1), abs=1e-12)
    assert solution_11_4() == pytest.approx((20 + 119) * 100 / 2 / 119, abs=1e-12)
