"""Chapter 10 exercises: every stored answer digest is the digest of an independently computed solution."""

from __future__ import annotations

import math

import pytest
import sacrebleu

from tformer.book.exercises import check


def solution_10_1() -> int:
    L, real = 8, 6  # 8 target positions, the last 2 padded
    return sum(1 for i in range(L) for j in range(L) if j <= i and j < real)


def solution_10_2() -> int:
    targets = ["猫 坐 在 垫子 上", "猫 追 老鼠 ， 因为 它 饿 了"]
    return sum(len(t.split()) + 1 for t in targets)  # words plus EOS; padding is ignored by the loss


def solution_10_3() -> float:
    n, layers = 12, 2
    without = layers * sum(range(1, n + 1))  # step t recomputes keys for all t positions
    with_cache = layers * n  # one new key per step
    return without / with_cache


def solution_10_4() -> float:
    # sacrebleu directly (the reference implementation), Chinese tokenisation: one character per token
    return sacrebleu.corpus_bleu(["猫 坐 在 垫子"], [["猫 坐 在 垫子 上"]], tokenize="zh").score


SOLUTIONS = {"10.1": solution_10_1, "10.2": solution_10_2, "10.3": solution_10_3, "10.4": solution_10_4}


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_solution_is_accepted_and_a_wrong_answer_is_not(exercise_id: str) -> None:
    answer = SOLUTIONS[exercise_id]()
    assert check(exercise_id, answer) is True
    assert check(exercise_id, answer + 1) is False


def test_solutions_match_the_hand_counts() -> None:
    assert (solution_10_1(), solution_10_2()) == (1 + 2 + 3 + 4 + 5 + 6 + 6 + 6, 6 + 9)
    assert solution_10_3() == 78 / 12
    # all n-gram precisions are 1, so BLEU is the brevity penalty exp(1 - 6/5) (5 hypothesis, 6 reference chars)
    assert solution_10_4() == pytest.approx(100 * math.exp(1 - 6 / 5), abs=1e-9)
