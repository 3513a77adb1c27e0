"""Nucleus (top-p) sampling, Holtzman et al. 2020, §3.1: the smallest most-likely set whose mass reaches p."""

from __future__ import annotations

import math

import pytest
import torch

from tformer.decoding import sample_next_token


def _draws(logits: torch.Tensor, n: int = 3000, **options: object) -> torch.Tensor:
    """n samples of every row, (n, B), from one seeded generator."""
    g = torch.Generator().manual_seed(0)
    return torch.stack([sample_next_token(logits, 1.0, generator=g, **options) for _ in range(n)])


def _reference_nucleus(probs: list[float], p: float) -> set[int]:
    """By hand: take tokens in order of probability until their summed probability reaches p."""
    kept, mass = set(), 0.0
    for i in sorted(range(len(probs)), key=lambda i: -probs[i]):
        kept.add(i)
        mass += probs[i]
        if mass >= p:
            break
    return kept


PROBS = [0.05, 0.5, 0.15, 0.3]  # most likely first: token 1, 3, 2, 0


@pytest.mark.parametrize(("top_p", "kept"), [(0.45, {1}), (0.55, {1, 3}), (0.79, {1, 3}), (0.81, {1, 3, 2}),
                                             (0.96, {0, 1, 2, 3})])  # fmt: skip
def test_the_token_that_crosses_the_threshold_is_kept(top_p: float, kept: set[int]) -> None:
    logits = torch.tensor([PROBS]).log()  # (1, V)
    assert _reference_nucleus(PROBS, top_p) == kept
    assert set(_draws(logits, top_p=top_p)[:, 0].tolist()) == kept


def test_the_kept_tokens_keep_their_relative_odds() -> None:
    logits = torch.tensor([PROBS]).log()
    draws = _draws(logits, n=20000, top_p=0.55)[:, 0]
    share = (draws == 1).float().mean().item()  # renormalised: 0.5 / 0.8 = 0.625
    assert abs(share - 0.625) < 4 * math.sqrt(0.625 * 0.375 / 20000)


def test_top_p_one_changes_nothing() -> None:
    logits = torch.randn(4, 50, generator=torch.Generator().manual_seed(1))
    assert torch.equal(_draws(logits, n=200, top_p=1.0), _draws(logits, n=200))
    assert torch.equal(_draws(logits, n=200, top_p=1), _draws(logits, n=200, top_p=None))


def test_rows_get_their_own_nucleus_and_top_k_comes_first() -> None:
    peaked = torch.tensor([0.9, 0.05, 0.03, 0.02]).log()
    flat = torch.full((4,), 0.25).log()
    draws = _draws(torch.stack([peaked, flat]), top_p=0.6)  # (n, 2)
    assert set(draws[:, 0].tolist()) == {0}  # 0.9 alone reaches 0.6
    assert set(draws[:, 1].tolist()) == {0, 1, 2, 3}  # 0.75 reaches 0.6 at the third; the fourth ties: kept
    # top-k = 2 first, then the nucleus of what is left, renormalised (0.5/0.8 = 0.625, 0.3/0.8): 0.625 alone
    # reaches 0.6, while without top-k 0.5 does not
    assert set(_draws(torch.tensor([PROBS]).log(), top_k=2, top_p=0.6)[:, 0].tolist()) == {1}
    assert set(_draws(torch.tensor([PROBS]).log(), top_p=0.6)[:, 0].tolist()) == {1, 3}


def test_greedy_ignores_top_p() -> None:
    logits = torch.tensor([PROBS]).log()
    assert sample_next_token(logits, 0.0, top_p=0.1).tolist() == [1]


@pytest.mark.parametrize(("top_p", "error"), [(0.0, ValueError), (1.5, ValueError), (-0.1, ValueError),
                                              (float("nan"), ValueError), ("0.9", TypeError), (True, TypeError)])  # fmt: skip
def test_a_bad_top_p_is_refused_by_name(top_p: object, error: type[Exception]) -> None:
    with pytest.raises(error, match=r"^top_p: expected"):
        sample_next_token(torch.zeros(1, 4), 1.0, top_p=top_p)  # type: ignore[arg-type]


def test_generate_passes_top_p_a_tiny_nucleus_is_greedy() -> None:
    from tformer import DecoderOnlyTransformer

    torch.manual_seed(0)
    model = DecoderOnlyTransformer(11, d_model=16, num_heads=2, num_layers=1, d_ff=32).eval()
    prompt = torch.tensor([[1, 2, 3]])
    greedy = model.generate(prompt, 6)
    nucleus = model.generate(prompt, 6, temperature=1.0, top_p=1e-6, generator=torch.Generator().manual_seed(3))
    assert torch.equal(nucleus, greedy)


def test_tokens_tied_with_the_last_kept_one_are_kept_as_top_k_does() -> None:
    logits = torch.tensor([[2.0, 1.0, 1.0, 1.0, 0.0]])  # ids 1, 2, 3 tie
    assert set(_draws(logits, top_p=0.6)[:, 0].tolist()) == {0, 1, 2, 3}  # not only id 1 (the sort's pick)
    assert set(_draws(logits, top_k=2)[:, 0].tolist()) == {0, 1, 2, 3}
