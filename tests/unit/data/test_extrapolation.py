"""tformer.data.extrapolation: the look-back-k task, its trainer and its accuracy measure."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from tformer.data.extrapolation import (
    IGNORE_INDEX,
    look_back_accuracy,
    look_back_batch,
    look_back_batches,
    look_back_loss,
)
from tformer.models import DecoderOnlyTransformer
from tformer.training.train import train


def test_batch_targets_are_the_tokens_k_steps_back() -> None:
    tokens, targets = look_back_batch(3, 7, shift=2, num_symbols=5, generator=torch.Generator().manual_seed(0))
    assert tokens.shape == targets.shape == (3, 7)
    assert tokens.dtype == torch.long and int(tokens.min()) >= 0 and int(tokens.max()) < 5
    assert (targets[:, :2] == IGNORE_INDEX).all()
    for t in range(2, 7):
        assert torch.equal(targets[:, t], tokens[:, t - 2])


def test_batch_is_reproducible_with_a_generator() -> None:
    a = look_back_batch(2, 5, shift=1, num_symbols=9, generator=torch.Generator().manual_seed(3))
    b = look_back_batch(2, 5, shift=1, num_symbols=9, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"length": 2, "shift": 2}, ValueError),
    ({"length": 0, "shift": 1}, ValueError),
    ({"length": 4.0, "shift": 1}, TypeError),
])
def test_batch_rejects_bad_sizes(kwargs: dict, error: type) -> None:
    with pytest.raises(error):
        look_back_batch(2, num_symbols=4, **kwargs)


def test_accuracy_of_an_oracle_is_one_and_of_a_constant_is_chance() -> None:
    num_symbols, shift = 4, 3

    def oracle(tokens: torch.Tensor) -> torch.Tensor:
        shifted = torch.roll(tokens, shifts=shift, dims=1)  # (B, L): x_{t-k} at t >= k
        return F.one_hot(shifted, num_symbols).float()

    accuracy, per_position = look_back_accuracy(oracle, 10, shift=shift, num_symbols=num_symbols)
    assert accuracy == 1.0
    assert per_position.shape == (10,)
    assert all(math.isnan(v) for v in per_position[:shift].tolist())
    assert torch.equal(per_position[shift:], torch.ones(10 - shift, dtype=torch.float64))

    def constant(tokens: torch.Tensor) -> torch.Tensor:
        return F.one_hot(torch.zeros_like(tokens), num_symbols).float()

    accuracy, _ = look_back_accuracy(constant, 200, shift=shift, num_symbols=num_symbols, num_sequences=200)
    assert abs(accuracy - 1 / num_symbols) < 0.02


def test_batches_stay_within_the_training_length_and_repeat() -> None:
    batches = look_back_batches(20, max_length=9, shift=2, num_symbols=5, batch_size=3, seed=4)
    assert len(batches) == 20
    lengths = {tokens.shape[1] for tokens, _ in batches}
    assert min(lengths) >= 4 and max(lengths) <= 9 and len(lengths) > 1
    again = look_back_batches(20, max_length=9, shift=2, num_symbols=5, batch_size=3, seed=4)
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(batches, again, strict=True))
    with pytest.raises(ValueError, match="max_length"):
        look_back_batches(1, max_length=3, shift=2, num_symbols=5)


def test_loss_counts_only_scored_positions_and_matches_cross_entropy() -> None:
    tokens, targets = look_back_batch(2, 6, shift=2, num_symbols=4, generator=torch.Generator().manual_seed(0))
    logits = torch.randn(2, 6, 4, generator=torch.Generator().manual_seed(1))
    loss, n = look_back_loss(lambda _: logits, (tokens, targets))
    assert n == 2 * 4
    expected = F.cross_entropy(logits[:, 2:].reshape(-1, 4), tokens[:, :4].reshape(-1))
    torch.testing.assert_close(loss, expected, rtol=0, atol=1e-6)


def test_training_with_the_book_loop_lowers_the_loss() -> None:
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(6, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=16, dropout=0.0,
                                   pad_id=None, positional="rope")
    batches = look_back_batches(40, max_length=12, shift=1, num_symbols=6, batch_size=16)
    history = train(model, batches, look_back_loss, lr=1e-2, max_steps=40, device="cpu", progress=False)
    assert sum(history.losses[-5:]) / 5 < 0.8 * sum(history.losses[:5]) / 5
