"""Worked solutions of chapter 16's exercises (the summary), computed independently of the notebook.

Each stored digest in ``tformer/exercise_answers/16.json`` must accept the right answer and reject a wrong one.
"""

from __future__ import annotations

import math

import pytest

from tformer.book.exercises import check


def solution_1() -> int:
    """4·n²·d = 16·n·d² ⇔ n = 4·d, for d = 512 (closed form; the first n where the core is not cheaper)."""
    d = 512
    return next(n for n in range(1, 10 * d) if 4 * n * n * d >= 16 * n * d * d)


def solution_2() -> int:
    """By hand: two attentions 2·4(D² + D), FFN 2·D·F + F + D, three LayerNorms 3·2D."""
    d, f = 512, 2048
    return 2 * 4 * (d * d + d) + (2 * d * f + f + d) + 3 * 2 * d


def solution_3() -> list[int]:
    """RNN n − 1 steps; contiguous k = 3 convs ⌈(n − 1)/2⌉ layers; dilated k = 3: smallest ℓ with 3^ℓ ≥ n; attention 1."""
    n = 1024
    dilated = 0
    while 3**dilated < n:
        dilated += 1
    return [n - 1, math.ceil((n - 1) / 2), dilated, 1]


def solution_4() -> int:
    """Smallest k with 0.46^k < 1e-6."""
    k = 0
    while 0.46**k >= 1e-6:
        k += 1
    return k


SOLUTIONS = {"16.1": solution_1, "16.2": solution_2, "16.3": solution_3, "16.4": solution_4}

MISTAKES = {
    "16.1": 512,  # the n = d crossover of the attention core with a plain RNN, not with an LSTM
    "16.2": 4_204_032 - 2 * 512,  # forgetting the cross-attention's own LayerNorm
    "16.3": [1024, 1024, 10, 1],  # counting positions instead of hops, and log₂ instead of log₃
    "16.4": 17,  # one step short: 0.46^17 is still above 1e-6
}


def test_solutions_agree_with_the_package() -> None:
    from tformer.analysis.complexity import maximum_path_length, rnn_flops, self_attention_flops
    from tformer.baselines.rnn import count_parameters
    from tformer.layers import DecoderLayer

    n = solution_1()
    assert self_attention_flops(n, 512) == rnn_flops(n, 512, gates=4)
    assert self_attention_flops(n - 1, 512) < rnn_flops(n - 1, 512, gates=4)
    assert count_parameters(DecoderLayer(512, 8, 2048)) == solution_2()
    paths = [maximum_path_length("rnn", 1024), maximum_path_length("conv", 1024, k=3),
             maximum_path_length("conv", 1024, k=3, dilated=True), maximum_path_length("self_attention", 1024)]
    assert paths == solution_3()


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_right_answer_is_accepted(exercise_id: str) -> None:
    assert check(exercise_id, SOLUTIONS[exercise_id]()) is True


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_wrong_answer_is_rejected(exercise_id: str) -> None:
    assert check(exercise_id, MISTAKES[exercise_id]) is False
