"""The small GPT of chapter 17: a character language model of five-character Tang poems, and how it trains.

A decoder-only model of the 2024 block (:class:`~tformer.variants.modern_block.ModernDecoderLM`: RoPE, RMSNorm,
SwiGLU) at 2 layers, D = 128, H = 4, F = 344 and a 64-character context, trained for a fixed budget of seconds with
AdamW and a learning rate that warms up, then falls to 0 along a cosine *of the budget's time* (so the schedule
ends when the budget does, whatever the machine's speed). The chapter, ``benchmarks/gpt_vs_nanogpt.py`` and the
shipped checkpoint (``tools/make_poet.py``) all train it through :func:`train_poet`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.optim.lr_scheduler import LambdaLR

from tformer._checks import check_int, check_number, check_tensor, check_type
from tformer.data.poems import load_tang_poems
from tformer.data.text import Vocab, WindowBatches, char_tokenize
from tformer.environment import check_device, seed_everything, training_clock
from tformer.training.train import History, lm_loss, train
from tformer.variants.modern_block import ModernDecoderConfig, ModernDecoderLM

__all__ = ["CONTEXT", "PoemData", "poem_data", "poet_config", "time_cosine_schedule", "train_poet",
           "validation_loss"]

CONTEXT = 64  # characters a model sees: a whole eight-line poem (48 characters and its newline) fits
BATCH, LR, WARMUP = 24, 3e-3, 0.05  # windows per step, peak learning rate, warm-up share of the budget


@dataclass(frozen=True)
class PoemData:
    """The poems as token ids: ``vocab`` (the training text's characters, ``\\n`` included), ``train`` and
    ``validation`` int64 streams ``(N,)``; every validation character is in the vocabulary (a reader's opening line may hold one that is not: it reads as ``<unk>``)."""

    vocab: Vocab
    train: Tensor
    validation: Tensor


def poem_data() -> PoemData:
    """Tokenise :func:`~tformer.data.poems.load_tang_poems` by character (V = 3,006 ids with the four specials)."""
    text = load_tang_poems()
    vocab = text.char_vocab()
    ids = [torch.tensor(vocab.encode(char_tokenize(part)), dtype=torch.long) for part in (text.train, text.validation)]
    return PoemData(vocab, *ids)


def poet_config(vocab_size: int) -> ModernDecoderConfig:
    """The chapter's model: 2 layers of the 2024 block, D = 128, H = 4, F = 344 (SwiGLU's 2/3 · 4D, rounded to
    a multiple of 8), ``max_len`` = :data:`CONTEXT`. Raises as :class:`ModernDecoderConfig`."""
    return ModernDecoderConfig(vocab_size, d_model=128, num_heads=4, num_layers=2, d_ff=344, max_len=CONTEXT)


def time_cosine_schedule(
    optimizer: torch.optim.Optimizer, budget_s: float, clock: Callable[[], float], *, warmup_share: float = WARMUP,
    warmup_steps: int | None = None, floor: float = 0.0,
) -> LambdaLR:
    """A ``LambdaLR`` whose factor follows the share of a time budget already spent, not the step count.

    Linear warm-up over the first ``warmup_steps`` steps (or ``warmup_share`` of the budget), then a cosine
    from 1 down to ``floor`` at the end of the budget (Loshchilov & Hutter 2017, SGDR, one cycle). A run cut by
    a time budget then always finishes its schedule, however many steps the machine manages. The clock starts
    when the schedule is made: make it just before training.

    ``warmup_share`` is not used when ``warmup_steps`` is given. The schedule reads ``clock`` as it is: time
    spent evaluating during training counts, whereas :func:`~tformer.training.train.train` leaves it out of its
    budget, so with evaluations inside the run the cosine ends early (pass a clock that pauses for them).
    :func:`train_poet` evaluates only at the end.

    Raises:
        TypeError: if ``optimizer`` is not a torch optimiser or ``clock`` not callable.
        TypeError / ValueError: if ``budget_s`` is not a positive finite number, ``warmup_share`` or ``floor``
            not in [0, 1), or ``warmup_steps`` not an int ≥ 1.
    """
    check_type("optimizer", optimizer, torch.optim.Optimizer)
    if not callable(clock):
        raise TypeError(f"clock: expected a function that returns seconds, got {type(clock).__name__}")
    budget_s = _check_budget(budget_s)
    warmup_share = check_number("warmup_share", warmup_share, 0.0, 1.0, open_max=True)
    floor = check_number("floor", floor, 0.0, 1.0, open_max=True)
    if warmup_steps is not None:
        warmup_steps = check_int("warmup_steps", warmup_steps, 1)
    start = clock()

    def factor(step: int) -> float:
        spent = min(1.0, (clock() - start) / budget_s)
        if warmup_steps is not None and step < warmup_steps:
            return (step + 1) / warmup_steps
        if warmup_steps is None and spent < warmup_share:
            return max(spent / warmup_share, 1e-3)
        begin = 0.0 if warmup_steps is not None else warmup_share
        progress = (spent - begin) / (1.0 - begin)
        return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))

    return LambdaLR(optimizer, factor)


def _check_budget(budget_s: object) -> float:
    value = check_number("budget_s", budget_s, 0.0, open_min=True)
    if not math.isfinite(value):
        raise ValueError(f"budget_s: expected a finite number of seconds, got {budget_s!r}")
    return value


@torch.no_grad()
def validation_loss(model: nn.Module, ids: Tensor, context: int = CONTEXT, batch_size: int = 64) -> float:
    """Mean next-character cross-entropy, in nats, over every non-overlapping ``context``-long window of ``ids``.

    Each window is read from its start, so early characters see little context, the same for every model
    compared. Divide by ln 2 for bits per character.

    Shape:
        ids: ``(N,)`` int64 or int32 with N > ``context``; returns a float.

    Raises:
        TypeError: if ``model`` is not an ``nn.Module``, ``ids`` not an integer tensor, or ``context`` or
            ``batch_size`` not an int.
        ValueError: if ``ids`` is not 1-D or holds no whole window and its next character (N ≤ ``context``),
            or ``context`` or ``batch_size`` is below 1.
    """
    check_type("model", model, nn.Module)
    context = check_int("context", context, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    if check_tensor("ids", ids, "int", "(N,)").numel() <= context:
        raise ValueError(f"ids: expected more than context={context} ids (one window and its next character), "
                         f"got {ids.numel()}")
    ids = ids.long()
    was_training = model.training
    model.eval()
    windows = (ids.numel() - 1) // context
    x = ids[: windows * context].view(windows, context)  # (W, context)
    y = ids[1 : windows * context + 1].view(windows, context)  # (W, context): the next characters
    total = 0.0
    try:
        for i in range(0, windows, batch_size):
            logits = model(x[i : i + batch_size])  # (b, context, V)
            total += nn.functional.cross_entropy(logits.flatten(0, 1), y[i : i + batch_size].flatten(),
                                                 reduction="sum").item()
    finally:
        model.train(was_training)
    return total / (windows * context)


def train_poet(
    data: PoemData, *, seed: int, budget_s: float, device: torch.device | str = "cpu", progress: bool = True,
) -> tuple[ModernDecoderLM, History]:
    """Train the chapter's model for ``budget_s`` seconds of training (evaluation excluded) from ``seed``.

    Seconds are read by :func:`~tformer.environment.training_clock` (CPU seconds of this process on one thread,
    else the wall clock). Each step: 24 random 64-character windows of the training stream, AdamW (lr 3e-3,
    betas 0.9 / 0.99, no weight decay), gradient norm clipped to 1, :func:`time_cosine_schedule` with 5% warm-up.
    :func:`validation_loss` is recorded once, at the end, in ``history.eval_metrics[-1]["val_loss"]`` (nats).

    Returns:
        ``(model in eval mode, History)``.

    Raises:
        TypeError: if ``data`` is not a :class:`PoemData` (make it with :func:`poem_data`), ``progress`` not a bool.
        TypeError / ValueError: if ``seed`` is not an int in [0, 2⁶³), ``budget_s`` not a positive finite
            number, ``device`` not a CPU or GPU this machine has (:func:`~tformer.environment.check_device`), or
            the validation stream holds no whole window.
    """
    check_type("data", data, PoemData, "PoemData (poem_data())")
    seed = check_int("seed", seed, 0, 2**63 - 1)
    budget_s = _check_budget(budget_s)
    device = check_device(device)
    check_type("progress", progress, bool)
    if data.validation.numel() <= CONTEXT:
        raise ValueError(f"data: expected a validation stream longer than {CONTEXT} ids, got {data.validation.numel()}")
    seed_everything(seed)
    model = ModernDecoderLM(poet_config(len(data.vocab))).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.99), weight_decay=0.0)
    clock = training_clock(device)
    batches = WindowBatches(data.train, CONTEXT, BATCH, num_batches=10**6, seed=seed)
    validation = data.validation.to(device)
    history = train(
        model, batches, lm_loss, optimizer=optimizer, scheduler=time_cosine_schedule(optimizer, budget_s, clock),
        time_budget_s=budget_s, clock=clock, device=device, seed=seed, progress=progress, desc="poet",
        evaluate=lambda m: {"val_loss": validation_loss(m, validation)}, eval_every=10**9,
    )
    return model.eval(), history
