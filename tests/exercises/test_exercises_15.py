"""Worked solutions of chapter 15's exercises (parallelism), computed independently of the notebook.

Each stored digest in ``tformer/exercise_answers/15.json`` must accept the right answer and reject a wrong one.
"""

from __future__ import annotations

import pytest

from tformer.book.exercises import check


def solution_1() -> float:
    """GPipe: (p − 1)/(m + p − 1) with p = 4, m = 12."""
    p, m = 4, 12
    return (p - 1) / (m + p - 1)


def solution_2() -> float:
    """ZeRO-3: (2 + 2 + 12) bytes × 7.5e9 parameters / 96 devices, in GB (1e9 bytes)."""
    return 16 * 7.5e9 / 96 / 1e9


def solution_3() -> int:
    """Smallest m with (p − 1)/(m + p − 1) < 0.05 for p = 8, by counting up."""
    m = 1
    while 7 / (m + 7) >= 0.05:
        m += 1
    return m


def solution_4() -> int:
    """Two all-reduces of B·L·D forward (after W_O and W_2) and two backward."""
    return 4 * 8 * 128 * 512


SOLUTIONS = {"15.1": solution_1, "15.2": solution_2, "15.3": solution_3, "15.4": solution_4}

MISTAKES = {
    "15.1": 3 / 12,  # (p − 1)/m: the bubble relative to the ideal time, not the share of the step
    "15.2": 16 * 7.5e9 / 64 / 1e9,  # the paper's N = 64
    "15.3": 133,  # one short: 7/140 is exactly 5 %, not below
    "15.4": 2 * 8 * 128 * 512,  # forward only
}


def test_solutions_agree_with_the_package() -> None:
    from tformer.analysis.parallelism import (
        bubble_fraction,
        simulate_pipeline,
        tensor_parallel_all_reduce_elements,
        training_memory_bytes,
    )

    assert bubble_fraction(4, 12) == pytest.approx(solution_1())
    assert simulate_pipeline(4, 12).bubble_fraction == pytest.approx(solution_1())
    assert training_memory_bytes(7_500_000_000, "zero3", 96).total / 1e9 == pytest.approx(solution_2())
    assert bubble_fraction(8, solution_3()) < 0.05 <= bubble_fraction(8, solution_3() - 1)
    assert tensor_parallel_all_reduce_elements(8, 128, 512, backward=True) == solution_4()


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_right_answer_is_accepted(exercise_id: str) -> None:
    assert check(exercise_id, SOLUTIONS[exercise_id]()) is True


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_wrong_answer_is_rejected(exercise_id: str) -> None:
    assert check(exercise_id, MISTAKES[exercise_id]) is False
