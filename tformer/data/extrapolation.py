"""A length-extrapolation toy: train short, test long (introduced in ``08_positional_encoding``).

The task, *look back k*: a decoder-only model reads random symbols ``x_0 … x_{L-1}`` and at every position
``t >= k`` must output ``x_{t-k}``. The rule is purely relative (always "k steps back"), so a positional scheme
that expresses relative offsets directly (RoPE) can keep applying it past the longest training length, while an
absolute scheme (a learned table, the sinusoidal table added to the embeddings) meets positions it never saw.
Press et al. 2022 ("Train Short, Test Long", ALiBi) measure the same effect on language modelling.

- :func:`look_back_batch` draws one batch of the task.
- :func:`look_back_batches` and :func:`look_back_loss` plug the task into :func:`tformer.training.train.train`; any
  model mapping ``tokens (B, L) -> logits (B, L, V)`` can be trained on lengths up to a maximum.
- :func:`look_back_accuracy` measures accuracy at a given length, overall and per position.

The model itself is :class:`tformer.models.DecoderOnlyTransformer` with ``positional="learned" | "sinusoidal" |
"rope" | "alibi"``; nothing here depends on which. Build it with ``pad_id=None``: every id ``0 … V-1`` is a
symbol here, and the default ``pad_id=0`` would hide symbol 0 as a padded key.

Dimension letters: B batch, L length, V vocabulary (= number of symbols).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tformer._checks import check_int

__all__ = ["IGNORE_INDEX", "look_back_accuracy", "look_back_batch", "look_back_batches", "look_back_loss"]

IGNORE_INDEX = -100  # target at positions t < k, where there is nothing to look back to (F.cross_entropy's default)


def look_back_batch(
    batch_size: int, length: int, *, shift: int, num_symbols: int, generator: torch.Generator | None = None
) -> tuple[Tensor, Tensor]:
    """One batch of the look-back-k task: random symbols and, at each position ``t >= shift``, target ``x_{t-shift}``.

    Shape:
        - output: ``(tokens (B, L), targets (B, L))``, both ``torch.long``; ``targets[:, :shift]`` is
          :data:`IGNORE_INDEX`.

    Args:
        batch_size: B.
        length: L, must exceed ``shift``.
        shift: k, how far back the answer lies.
        num_symbols: V; symbols are ``0 … V-1``.
        generator: optional ``torch.Generator`` for reproducible draws.

    Raises:
        TypeError: if a size is not an int.
        ValueError: if a size is < 1 or ``length <= shift``.
    """
    for name, value in (("batch_size", batch_size), ("length", length), ("shift", shift),
                        ("num_symbols", num_symbols)):
        check_int(name, value, 1)
    if length <= shift:
        raise ValueError(f"length: expected length > shift ({shift}), got {length}")
    tokens = torch.randint(0, num_symbols, (batch_size, length), generator=generator)  # (B, L)
    targets = torch.full_like(tokens, IGNORE_INDEX)  # (B, L)
    targets[:, shift:] = tokens[:, :-shift]
    return tokens, targets


def look_back_batches(
    num_batches: int,
    *,
    max_length: int,
    shift: int,
    num_symbols: int,
    batch_size: int = 32,
    seed: int = 0,
) -> list[tuple[Tensor, Tensor]]:
    """Training batches for :func:`tformer.training.train.train`: each of random length in ``[shift + 2, max_length]``.

    Every position a model sees in these batches is ``< max_length``; that is the point of the toy.

    Shape:
        - output: ``num_batches`` pairs ``(tokens (B, L), targets (B, L))``, L varying from batch to batch.

    Raises:
        TypeError: if a size is not an int.
        ValueError: if ``max_length < shift + 2`` or a size is < 1.
    """
    num_batches = check_int("num_batches", num_batches, 1)
    max_length = check_int("max_length", max_length, 1)
    if max_length < shift + 2:
        raise ValueError(f"max_length: expected >= shift + 2 = {shift + 2}, got {max_length}")
    generator = torch.Generator().manual_seed(check_int("seed", seed, 0, 2**63 - 1))
    batches = []
    for _ in range(num_batches):
        length = int(torch.randint(shift + 2, max_length + 1, (1,), generator=generator))
        batches.append(look_back_batch(batch_size, length, shift=shift, num_symbols=num_symbols,
                                       generator=generator))
    return batches


def look_back_loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> tuple[Tensor, int]:
    """The ``loss_fn`` for :func:`tformer.training.train.train`: cross-entropy on the scored positions ``t >= shift``.

    Shape:
        batch: ``tokens (B, L)``, ``targets (B, L)`` with :data:`IGNORE_INDEX` where nothing is scored.

    Returns:
        ``(mean loss in nats per scored token, number of scored tokens)``.
    """
    tokens, targets = batch
    logits = model(tokens)  # (B, L, V)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=IGNORE_INDEX)
    return loss, int((targets != IGNORE_INDEX).sum())


@torch.no_grad()
def look_back_accuracy(
    model: Callable[[Tensor], Tensor],
    length: int,
    *,
    shift: int,
    num_symbols: int,
    num_sequences: int = 64,
    seed: int = 1,
) -> tuple[float, Tensor]:
    """Accuracy of ``model`` on look-back-k sequences of one ``length`` (eval mode is the caller's job).

    Returns:
        ``(accuracy, per_position)``: the fraction of positions ``t >= shift`` predicted correctly, and a
        ``(L,)`` float tensor of per-position accuracy (NaN at ``t < shift``, which are not scored).

    Raises:
        ValueError: if ``length <= shift``; whatever ``model`` raises (a learned positional table, for
            example, refuses positions beyond its ``max_len``).
    """
    generator = torch.Generator().manual_seed(check_int("seed", seed, 0, 2**63 - 1))
    tokens, targets = look_back_batch(num_sequences, length, shift=shift, num_symbols=num_symbols,
                                      generator=generator)
    correct = (model(tokens).argmax(dim=-1) == targets).double()  # (B, L)
    per_position = correct.mean(dim=0)  # (L,)
    per_position[:shift] = float("nan")
    return float(correct[:, shift:].mean()), per_position
