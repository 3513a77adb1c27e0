"""Chapter 06 exercises: every stored answer digest is the digest of an independently computed solution."""

from __future__ import annotations

import pytest

from tformer.book.exercises import check


def solution_06_1() -> int:
    L = 10
    return L * (L + 1) // 2  # query i sees keys 0..i: 1 + 2 + ... + L


def solution_06_2() -> int:
    L, S = 3, 7
    return S - L + 1  # bottom-right alignment: query 0 sits at position S - L and sees keys 0..S-L


def solution_06_3() -> int:
    lengths, S = [5, 2], 5
    return sum(1 for n in lengths for i in range(S) for j in range(S) if j <= i and j < n)


SOLUTIONS = {"06.1": solution_06_1, "06.2": solution_06_2, "06.3": solution_06_3}


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_solution_is_accepted_and_a_wrong_answer_is_not(exercise_id: str) -> None:
    answer = SOLUTIONS[exercise_id]()
    assert check(exercise_id, answer) is True
    assert check(exercise_id, answer + 1) is False


def test_solutions_match_the_hand_counts() -> None:
    assert (solution_06_1(), solution_06_2(), solution_06_3()) == (55, 5, 24)
