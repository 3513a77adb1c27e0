"""Chapter 09 exercises: every stored answer digest is the digest of an independently computed solution."""

from __future__ import annotations

import math

import pytest
import torch

from tformer.book.exercises import check
from tformer.layers import EncoderLayer
from tformer.models import Transformer


def attention_params(d: int) -> int:
    return 4 * d * d + 4 * d  # W_Q, W_K, W_V, W_O with biases


def ffn_params(d: int, f: int) -> int:
    return d * f + f + f * d + d  # W_1, b_1, W_2, b_2


def solution_09_1() -> int:
    d, f = 768, 3072
    return attention_params(d) + ffn_params(d, f) + 2 * (2 * d)  # + two LayerNorms (gamma, beta)


def solution_09_2() -> float:
    x = [1.0, 2.0, 3.0, 4.0]
    mean = sum(x) / len(x)
    var = sum((v - mean) ** 2 for v in x) / len(x)  # biased variance, as LayerNorm
    return (x[-1] - mean) / math.sqrt(var)


def solution_09_3() -> int:
    d, f, v, n = 1024, 4096, 37_000, 6
    encoder = n * (attention_params(d) + ffn_params(d, f) + 2 * (2 * d))
    decoder = n * (2 * attention_params(d) + ffn_params(d, f) + 3 * (2 * d))
    return encoder + decoder + v * d + v  # one shared V x D matrix + the output bias


def solution_09_4() -> float:
    layers = 12
    return math.sqrt(1 + 2 * layers)  # independent additions: variances add


SOLUTIONS = {"09.1": solution_09_1, "09.2": solution_09_2, "09.3": solution_09_3, "09.4": solution_09_4}


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_solution_is_accepted_and_a_wrong_answer_is_not(exercise_id: str) -> None:
    answer = SOLUTIONS[exercise_id]()
    assert check(exercise_id, answer) is True
    assert check(exercise_id, answer + 1) is False


def test_closed_forms_match_the_modules() -> None:
    with torch.device("meta"):
        layer = EncoderLayer(768, 12, 3072)
        big = Transformer(37_000, 37_000, d_model=1024, num_heads=16, d_ff=4096, tie_embeddings=True)
    big.src_embed.weight = big.tgt_embed.weight
    assert sum(p.numel() for p in layer.parameters()) == solution_09_1()
    assert sum(p.numel() for p in big.parameters()) == solution_09_3()


def test_layer_norm_answer_matches_torch() -> None:
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=torch.float64)
    out = torch.nn.functional.layer_norm(x, (4,), eps=0.0)
    torch.testing.assert_close(out[0, -1].item(), solution_09_2(), rtol=0, atol=1e-12)
