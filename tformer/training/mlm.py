"""Masked-token pre-training (BERT's cloze objective) for an encoder-only model.

Devlin et al. 2019, *BERT*, §3.1 "Task #1: Masked LM": choose 15% of the input tokens; replace 80% of the chosen
by ``[MASK]``, 10% by a random token and leave 10% unchanged; predict the original token at the chosen positions
only. :func:`mask_tokens` makes one such corruption, :func:`mlm_loss` is the matching loss in the form
:func:`tformer.training.train` expects, and :func:`pretrain_mlm` runs the pre-training on a list of sentences
(chapter 11 and ``benchmarks/pretrain_hsk_mlm.py`` both call it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence

import torch
from torch import Tensor, nn

from tformer._checks import check_ids, check_int, check_number, check_tensor, is_int
from tformer.data.text import PAD_ID, pad_sequences
from tformer.training.train import History, train

__all__ = ["mask_tokens", "mlm_loss", "pretrain_mlm"]


def mask_tokens(
    tokens: Tensor,
    *,
    mask_id: int,
    vocab_size: int,
    rate: float = 0.15,
    first_word_id: int | None = None,
    pad_id: int = PAD_ID,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """BERT's corruption of a batch: choose ``rate`` of the real tokens; 80% → ``mask_id``, 10% → random, 10% kept.

    Args:
        tokens: ``(B, L)`` integer ids, padded with ``pad_id``.
        mask_id: the id of the ``<mask>`` token.
        vocab_size: V; random replacements are drawn from ``[first_word_id, V)``.
        rate: the share of real (non-padding) tokens chosen, in [0, 1] (BERT: 0.15).
        first_word_id: the smallest id a random replacement may take (default ``mask_id + 1``, so that padding,
            the special tokens and ``<mask>`` itself are never drawn).
        pad_id: padding id; padded positions are never chosen.
        generator: a ``torch.Generator`` (on ``tokens``' device) for a reproducible corruption.

    Returns:
        ``(corrupted (B, L), labels (B, L))``, both ``int64``: the labels hold the original token at chosen
        positions and ``pad_id`` elsewhere (so ``cross_entropy(..., ignore_index=pad_id)`` scores only those).

    Raises:
        TypeError: if ``tokens`` is not an integer tensor, an id or size is not an int, or ``generator`` is not
            a ``torch.Generator``.
        ValueError: if ``tokens`` is not 2-D or holds an id outside ``[0, V)``, ``rate`` is outside [0, 1],
            ``mask_id`` equals ``pad_id`` or is not below V, or the replacement range ``[first_word_id, V)`` is
            empty or reaches down to ``mask_id`` or ``pad_id``.
    """
    check_tensor("tokens", tokens, "int", "(B, L)")
    vocab_size = check_int("vocab_size", vocab_size, 1)
    pad_id = check_int("pad_id", pad_id, 0)
    mask_id = check_int("mask_id", mask_id, 0, vocab_size - 1)
    if mask_id == pad_id:
        raise ValueError(f"mask_id: expected an id other than pad_id={pad_id}, got {mask_id}")
    rate = check_number("rate", rate, 0.0, 1.0)
    if first_word_id is None:  # the default, mask_id + 1: a bad range is then mask_id's fault, not the caller's
        if mask_id < pad_id or mask_id + 1 >= vocab_size:
            raise ValueError(f"mask_id: expected an id above pad_id={pad_id} and below vocab_size - 1="
                             f"{vocab_size - 1} (random words are drawn from mask_id + 1 up; or pass "
                             f"first_word_id), got {mask_id}")  # fmt: skip
        first = mask_id + 1
    else:
        first = check_int("first_word_id", first_word_id, 0)
        if first <= max(mask_id, pad_id):  # a random replacement must never be padding or <mask>
            raise ValueError(f"first_word_id: expected an id above mask_id={mask_id} and pad_id={pad_id}, "
                             f"got {first}")  # fmt: skip
        if first >= vocab_size:
            raise ValueError(f"first_word_id: expected an id below vocab_size={vocab_size}, got {first}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator: expected a torch.Generator or None, got {type(generator).__name__}")
    check_ids("tokens", tokens, vocab_size)
    tokens = tokens.long()  # both outputs are int64, whatever integer dtype came in
    device = tokens.device
    chosen = (torch.rand(tokens.shape, generator=generator, device=device) < rate) & (tokens != pad_id)
    r = torch.rand(tokens.shape, generator=generator, device=device)
    random_ids = torch.randint(first, vocab_size, tokens.shape, generator=generator, device=device)
    corrupted = torch.where(chosen & (r < 0.8), mask_id, tokens)
    corrupted = torch.where(chosen & (r >= 0.8) & (r < 0.9), random_ids, corrupted)
    return corrupted, tokens.masked_fill(~chosen, pad_id)


def mlm_loss(
    model: nn.Module,
    tokens: Tensor,
    *,
    mask_id: int,
    vocab_size: int,
    rate: float = 0.15,
    pad_id: int = PAD_ID,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, int]:
    """Cross-entropy of ``model``'s token logits at the positions :func:`mask_tokens` chose.

    Args:
        model: maps ``(B, L)`` ids to ``(B, L, V)`` logits, e.g. :class:`tformer.models.EncoderOnlyTransformer`.
        tokens: ``(B, L)`` integer ids, padded with ``pad_id``.
        mask_id, vocab_size, rate, pad_id, generator: as :func:`mask_tokens`.

    Returns:
        ``(mean loss in nats per chosen token, number of chosen tokens)``; a batch where no token was chosen
        gives a loss of 0 with no gradient through the logits' values (never a NaN).

    Raises:
        As :func:`mask_tokens`; ValueError if the model's logits are not ``(B, L, vocab_size)``, or the model has
        a ``pad_id`` (as :class:`tformer.models.EncoderOnlyTransformer` does) other than ``pad_id`` (it would
        attend to the batch's padding; :func:`pretrain_mlm` pads with ``PAD_ID`` = 0).
    """
    model_pad_id = getattr(model, "pad_id", pad_id)  # a model that masks padding keys by its own id
    if model_pad_id != pad_id:  # otherwise the padding would be attended to and another id masked out
        raise ValueError(f"pad_id: expected the model's pad_id={model_pad_id!r} (the keys it masks as padding), "
                         f"got {pad_id!r}")  # fmt: skip
    corrupted, labels = mask_tokens(
        tokens, mask_id=mask_id, vocab_size=vocab_size, rate=rate, pad_id=pad_id, generator=generator
    )
    logits = model(corrupted)  # (B, L, V)
    check_tensor("model(tokens)", logits, "float", "(B, L, V)", B=tokens.shape[0], L=tokens.shape[1], V=vocab_size)
    n = int((labels != pad_id).sum())
    if n == 0:  # cross_entropy's mean over zero targets is NaN; an empty sum is 0 even if a logit is infinite
        return logits.flatten()[:0].sum(), 0
    loss = nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=pad_id)
    return loss, n


def pretrain_mlm(
    model: nn.Module,
    sentences: Sequence[Sequence[int]],
    *,
    mask_id: int,
    vocab_size: int,
    time_budget_s: float | None = None,
    max_steps: int | None = None,
    batch_size: int = 64,
    lr: float = 2e-3,
    seed: int = 0,
    clock: Callable[[], float] = time.perf_counter,
    device: torch.device | str | None = None,
) -> History:
    """Masked-token pre-training: random batches of ``sentences`` until the step or time budget runs out.

    Each step draws ``batch_size`` sentences at random (with replacement, seeded by ``seed``), pads them, and
    takes one step of :func:`tformer.training.train` (Adam, betas (0.9, 0.98), constant ``lr``, gradient norm
    clipped to 1) on :func:`mlm_loss`, which draws a fresh BERT corruption each time.

    Args:
        model: maps ``(B, L)`` ids to ``(B, L, V)`` logits, e.g. :class:`tformer.models.EncoderOnlyTransformer`.
        sentences: token-id lists (no padding), e.g. one per sentence of unlabelled text.
        mask_id, vocab_size: as :func:`mask_tokens` (random replacements come from ``(mask_id, V)``).
        time_budget_s, max_steps: budgets, at least one (seconds as read by ``clock``).
        batch_size: sentences per step.
        lr: Adam's learning rate.
        seed: seeds the batch order, the corruption and dropout.
        clock: what a training second is, e.g. :func:`tformer.training.train.training_clock`.
        device: where to train (default: CUDA when present).

    Returns:
        The :class:`tformer.training.train.History` (losses in nats per chosen token).

    Raises:
        TypeError: if ``sentences`` is not a list (a generator cannot be drawn from), a sentence is not a list of
            ints, or ``vocab_size``/``mask_id``/``seed``/``batch_size``/
            ``max_steps`` is not an int.
        ValueError: if ``vocab_size`` is below 3 or ``mask_id`` outside ``[1, vocab_size - 1)`` (0 is padding, and
            random words are drawn from above ``mask_id``); if the model's ``pad_id`` is not ``PAD_ID`` = 0; if
            ``sentences`` is empty, holds an empty sentence or an id outside ``[1, vocab_size)`` (0 is
            padding); as :func:`tformer.training.train` for the budgets; as :func:`mask_tokens` for the ids.
    """
    # before the sentences, whose ids are checked against them: 0 is padding, and random words come from above mask_id
    vocab_size = check_int("vocab_size", vocab_size, 3)
    mask_id = check_int("mask_id", mask_id, 1, vocab_size - 2)
    model_pad_id = getattr(model, "pad_id", PAD_ID)
    if model_pad_id != PAD_ID:  # the batches are padded with PAD_ID, which such a model would attend to
        raise ValueError(f"model: expected a model whose pad_id is {PAD_ID} (the batches are padded with it), got "
                         f"pad_id={model_pad_id!r}")  # fmt: skip
    batch_size = check_int("batch_size", batch_size, 1)
    seed = check_int("seed", seed, 0)
    if max_steps is not None:
        max_steps = check_int("max_steps", max_steps, 1)
    if not isinstance(sentences, Sequence) or isinstance(sentences, str):  # drawn from at random: len and [i]
        raise TypeError(f"sentences: expected a list of id lists, got {type(sentences).__name__}")
    if len(sentences) == 0:
        raise ValueError(f"sentences: expected a non-empty list of id lists, got {sentences!r:.40}")
    for i, sentence in enumerate(sentences):
        if not isinstance(sentence, Sequence) or isinstance(sentence, str) or not all(is_int(t) for t in sentence):
            raise TypeError(f"sentences[{i}]: expected a list of int token ids, got {sentence!r:.40}")
        if len(sentence) == 0:
            raise ValueError(f"sentences[{i}]: expected a non-empty sentence, got []")
        if min(sentence) <= 0 or max(sentence) >= vocab_size:  # id 0 is padding: it would be masked out silently
            raise ValueError(f"sentences[{i}]: expected ids in [1, vocab_size={vocab_size}), got min "
                             f"{min(sentence)}, max {max(sentence)}")  # fmt: skip
    order = torch.Generator().manual_seed(seed)

    def batches() -> Iterator[Tensor]:
        while True:  # random batches until a budget ends
            picks = torch.randint(len(sentences), (batch_size,), generator=order).tolist()
            yield pad_sequences([sentences[i] for i in picks])  # (B, L)

    def loss_fn(m: nn.Module, tokens: Tensor) -> tuple[Tensor, int]:
        return mlm_loss(m, tokens, mask_id=mask_id, vocab_size=vocab_size)

    return train(model, batches(), loss_fn, lr=lr, time_budget_s=time_budget_s, max_steps=max_steps, clock=clock,
                 device=device, seed=seed, progress=False)  # fmt: skip
