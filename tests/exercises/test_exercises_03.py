"""Worked solutions of chapter 03's exercises, computed independently with plain Python maths.

Each stored digest in ``tformer/exercise_answers/03.json`` must accept the right answer and reject a wrong one.
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


def solution_1() -> float:
    """Course grade: 20% homework (85), 30% midterm (60), 50% final (90)."""
    return 0.2 * 85 + 0.3 * 60 + 0.5 * 90


def solution_2() -> float:
    """Weight on 猫 when 老鼠 offers the same vector [1, 1, 0]; 它 asks [2, 2, -1]."""
    offers = [[1, 1, 0], [0, 0, 0], [1, 1, 0], [0, 0, 1], [0, 0, 1], [0.5, 0.5, 0], [0, 0, 0], [0, 0, 1]]
    return softmax([dot(o, [2, 2, -1]) for o in offers])[0]


def solution_3() -> float:
    """Soft lookup of legs at temperature 1, query [1, 1], with 蛇's key changed to [0.0, 0.9]."""
    keys = [[0.9, 0.8], [0.9, 0.3], [0.2, 0.7], [0.0, 0.9], [0.0, 0.9]]
    legs = [4.0, 4.0, 2.0, 0.0, 0.0]
    return dot(softmax([dot(k, [1.0, 1.0]) for k in keys]), legs)


def solution_4() -> list[int]:
    """Top-2 hard lookup: the two chosen values get a gradient (1/2 each); topk's indices cut every key's path."""
    return [2, 0]


def test_solution_4_with_autograd() -> None:
    torch = pytest.importorskip("torch")
    query = torch.tensor([1.0, 1.0], requires_grad=True)
    keys = torch.tensor([[0.9, 0.8], [0.9, 0.3], [0.2, 0.7], [0.0, 0.9], [0.0, 0.2]], requires_grad=True)
    legs = torch.tensor([4.0, 4.0, 2.0, 0.0, 0.0], requires_grad=True)
    best_two = torch.topk(keys @ query, k=2).indices  # integer indices: the path from the scores ends here
    legs[best_two].mean().backward()
    values_with_gradient = int((legs.grad != 0).sum())
    keys_with_gradient = 0 if keys.grad is None else int((keys.grad.norm(dim=-1) != 0).sum())
    assert [values_with_gradient, keys_with_gradient] == solution_4()


SOLUTIONS = {"03.1": solution_1, "03.2": solution_2, "03.3": solution_3, "03.4": solution_4}


def test_solution_2_by_hand() -> None:
    # Scores: 猫 4, 老鼠 4, 它 2, 追 0, 饿 0, three function words -1.
    expected = math.exp(4) / (2 * math.exp(4) + math.exp(2) + 2 + 3 * math.exp(-1))
    assert solution_2() == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_right_answer_is_accepted(exercise_id: str) -> None:
    assert check(exercise_id, SOLUTIONS[exercise_id]()) is True


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_wrong_answer_is_rejected(exercise_id: str) -> None:
    answer = SOLUTIONS[exercise_id]()
    wrong = [a + 1 for a in answer] if isinstance(answer, list) else answer + 0.1
    assert check(exercise_id, wrong) is False


@pytest.mark.parametrize("value", [0.09375, 0.19140625, 0.1796875])
def test_03_6_accepts_other_seeds(value: float) -> None:
    # learn_queries(seed, temperature=0.02) for seeds 26, 11 and 28: correct answers outside seeds 0-2's spread.
    from tformer.book.exercises import check_measured

    assert check_measured("03.6", value) is True


def test_03_6_rejects_unchanged_temperature() -> None:
    from tformer.book.exercises import check_measured

    assert check_measured("03.6", 0.92) is False  # τ = 1, the default
