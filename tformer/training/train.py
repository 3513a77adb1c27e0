"""The one training loop every chapter uses, the paper's warm-up schedule, and checkpoints.

Introduced in ``02_seq2seq_bottleneck``; used by every chapter that trains. :func:`train` runs optimisation
steps until a step, epoch or time budget runs out, shows a ``tqdm`` progress bar (never prints), clips gradients,
evaluates on a schedule and returns a :class:`History` for the plotters. The model, the data and the loss stay the
caller's: ``loss_fn(model, batch) -> (mean_loss, num_tokens)`` is all the loop knows about the task, and
:func:`seq2seq_loss` / :func:`lm_loss` are the two the book needs.

Checkpoints hold only tensors, numbers, strings, lists and dicts, so they load with
``torch.load(..., weights_only=True)``: no pickled code runs when a reader opens a file.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch.optim.lr_scheduler import LambdaLR
from tqdm import tqdm  # the text bar: tqdm.auto needs ipywidgets in Jupyter and warns without it

from tformer._checks import check_flags, check_int, check_number, check_type, is_int, is_number, type_name
from tformer.data.text import BOS_ID, PAD_ID, Vocab
from tformer.environment import check_device, get_device, seed_everything, training_clock
from tformer.training.teacher_forcing import sequence_cross_entropy, shift_right

__all__ = [
    "History",
    "linear_warmup_decay",
    "lm_loss",
    "load_checkpoint",
    "noam_lr",
    "save_checkpoint",
    "seq2seq_loss",
    "step_cost_ratios",
    "to_device",
    "train",
    "training_clock",
    "warmup_schedule",
]


def step_cost_ratios(
    steps: Mapping[str, Callable[[], object]],
    reference: str,
    *,
    clock: Callable[[], float],
    rounds: int = 7,
) -> dict[str, list[float]]:
    """How many of ``reference``'s training steps each entry's step costs, timed side by side in rounds.

    The book's "equal training time" comparisons give one model a number of steps and every other model the
    steps that fit into the same time: ``round(reference_steps / median(ratios[name]))``. Timing each model
    once, before its own run, lets a change in the machine's load (another program starting) fall on one model
    only; here every round calls each entry once, back to back and in the mapping's order, so a slow spell
    lands on all of them, and each round gives one ratio per entry. Take the median round.

    Args:
        steps: name -> a callable that does a fixed piece of training work (e.g. two optimiser steps of one
            model on fixed batches); warm it up before (first calls allocate memory and pick kernels).
        reference: the name whose cost is the unit; its own ratios are all 1.0.
        clock: what a training second is, e.g. :func:`training_clock` (CPU time on one thread).
        rounds: how many rounds (each calls every entry once).

    Returns:
        name -> ``rounds`` ratios, Python floats (seconds of that entry / seconds of the reference, in the same
        round; a clock that returns NumPy numbers gives plain floats too).

    Raises:
        TypeError: if ``steps`` is not a mapping of callables, ``reference`` is not a str, ``clock`` is not
            callable or returns something that is not a number (a float, an int or a NumPy number), or
            ``rounds`` is not an int. ValueError: if ``steps`` is empty, ``reference`` is not a key of ``steps``,
            ``rounds`` < 1, or in some round an entry's time (any entry's, not only the reference's) is not
            finite and > 0 (the message names the entry; give each call more work).
    """
    if not isinstance(steps, Mapping):
        raise TypeError(f"steps: expected a non-empty mapping of name -> callable, got {type_name(steps)}")
    if not steps:
        raise ValueError(f"steps: expected a non-empty mapping of name -> callable, got an empty {type_name(steps)}")
    for name, step in steps.items():
        if not callable(step):
            raise TypeError(f"steps[{name!r}]: expected a callable, got {type(step).__name__}")
    if not isinstance(reference, str):
        raise TypeError(f"reference: expected a str (a key of steps), got {type(reference).__name__}")
    if reference not in steps:
        raise ValueError(f"reference: expected one of {list(steps)}, got {reference!r}")
    if not callable(clock):
        raise TypeError(f"clock: expected a callable returning seconds, got {type(clock).__name__}")
    rounds = check_int("rounds", rounds, 1)

    def now() -> float:  # a Python float: a NumPy clock's np.float64 would otherwise reach the ratios
        seconds = clock()
        if not is_number(seconds):
            raise TypeError(f"clock: expected a callable returning seconds as a number, got {type_name(seconds)}")
        return float(seconds)

    ratios: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        spent = {}
        for name, step in steps.items():
            start = now()
            step()
            spent[name] = now() - start
        for name, seconds in spent.items():  # 0 would give a ratio of 0 (or divide by 0), NaN a NaN ratio
            if not (math.isfinite(seconds) and seconds > 0):
                raise ValueError(f"steps[{name!r}]: expected a positive, finite time per call, got {seconds} s "
                                 "on this clock; give each call more work")  # fmt: skip
        for name in steps:
            ratios[name].append(spent[name] / spent[reference])
    return ratios


@dataclass
class History:
    """What one :func:`train` call did, for plots and asserts.

    Attributes:
        losses: training loss (nats per token) at every optimiser step.
        learning_rates: the learning rate used at every step.
        eval_steps: the step after which each evaluation ran.
        eval_metrics: the dict each evaluation returned (e.g. ``{"loss": ..., "exact_match": ...}``).
        eval_seconds: training seconds (evaluation excluded, the clock the time budget reads) at each
            evaluation, for curves of a metric against training time.
        steps: optimiser steps taken.
        epochs: passes over the training batches (fractional when a budget stopped mid-epoch).
        tokens: tokens processed (as counted by ``loss_fn``).
        train_time_s: seconds spent training, evaluation excluded, on ``train``'s ``clock`` (the time the
            budget counts).
        wall_time_s: wall-clock seconds for the whole call, evaluation included.
        tokens_per_s: ``tokens / train_time_s``.
        stop_reason: ``"max_steps"``, ``"max_epochs"``, ``"time_budget"``, ``"target_reached"`` (``stop_when``
            accepted an evaluation), or ``"batches_exhausted"`` when ``batches`` was a one-shot iterator (a
            generator) that yielded nothing on a later pass.
    """

    losses: list[float] = field(default_factory=list)
    learning_rates: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    eval_metrics: list[dict[str, float]] = field(default_factory=list)
    eval_seconds: list[float] = field(default_factory=list)
    steps: int = 0
    epochs: float = 0.0
    tokens: int = 0
    train_time_s: float = 0.0
    wall_time_s: float = 0.0
    tokens_per_s: float = 0.0
    stop_reason: str = ""

    def metric(self, name: str) -> list[float]:
        """One evaluation metric across evaluations (aligned with ``eval_steps``).

        Raises:
            KeyError: if no evaluation returned ``name``.
        """
        if not any(name in m for m in self.eval_metrics):
            raise KeyError(
                f"name: no evaluation returned {name!r}; have {sorted({k for m in self.eval_metrics for k in m})}"
            )
        return [m.get(name, math.nan) for m in self.eval_metrics]

    def to_dict(self) -> dict[str, Any]:
        """Plain lists and numbers (safe for ``torch.save`` + ``weights_only=True`` and for JSON)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> History:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)


# ----------------------------------------------------------------------------------------------- the schedule
def noam_lr(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    """The paper's learning rate: ``factor · D^-0.5 · min(step^-0.5, step · warmup^-1.5)``.

    Vaswani et al. 2017, §5.3, Eq. 3: linear warm-up for ``warmup_steps`` steps, then decay as 1/√step; the peak
    ``factor · (D · warmup)^-0.5`` is reached at ``step == warmup_steps``. Steps count from 1 (step 0 is treated as 1).

    Raises:
        ValueError: if ``d_model < 1``, ``warmup_steps < 1`` or ``step < 0``.
    """
    d_model = check_int("d_model", d_model, 1)
    warmup_steps = check_int("warmup_steps", warmup_steps, 1)
    step = check_int("step", step, 0)
    check_number("factor", factor)
    step = max(step, 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def warmup_schedule(
    optimizer: torch.optim.Optimizer, d_model: int, warmup_steps: int, factor: float = 1.0
) -> LambdaLR:
    """A ``LambdaLR`` that sets every group's learning rate to :func:`noam_lr` of the step (the optimiser's own
    ``lr`` is ignored). Call ``scheduler.step()`` after each ``optimizer.step()`` (:func:`train` does).

    Raises:
        ValueError: as :func:`noam_lr`; or if a parameter group's initial ``lr`` is 0.
    """
    noam_lr(1, d_model, warmup_steps, factor)  # validate
    lambdas = []
    for group in optimizer.param_groups:
        base = group.get("initial_lr", group["lr"])
        if base == 0:
            raise ValueError("optimizer: expected a non-zero lr in every parameter group (the schedule scales it), got 0")
        lambdas.append(lambda s, base=base: noam_lr(s + 1, d_model, warmup_steps, factor) / base)
    return LambdaLR(optimizer, lambdas)


def linear_warmup_decay(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int) -> LambdaLR:
    """A ``LambdaLR``: the optimiser's ``lr`` times a factor rising linearly to 1 over ``warmup_steps``, then
    falling linearly to 0 at ``total_steps``.

    Short CPU runs end far from the paper's 100 k steps, where the 1/√step tail of :func:`noam_lr` is still
    high; decaying to zero at the end of the budget is what takes the toy tasks from ~97% to 99+% exact match.

    Raises:
        ValueError: unless ``0 <= warmup_steps < total_steps``.
    """
    total_steps = check_int("total_steps", total_steps, 1)
    warmup_steps = check_int("warmup_steps", warmup_steps, 0, total_steps - 1)

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return max(0.0, (total_steps - step) / (total_steps - warmup_steps))

    return LambdaLR(optimizer, factor)


# ----------------------------------------------------------------------------------------------- losses
def seq2seq_loss(
    model: nn.Module,
    batch: tuple[Tensor, Tensor],
    *,
    bos_id: int = BOS_ID,
    pad_id: int = PAD_ID,
    label_smoothing: float = 0.0,
) -> tuple[Tensor, int]:
    """Teacher-forced cross-entropy of an encoder-decoder: ``model(src, shift_right(tgt))`` against ``tgt``.

    Shape:
        batch: ``src (B, S)``, ``tgt (B, L)`` (targets end in EOS, padded with ``pad_id``).

    Returns:
        ``(mean loss over non-pad target tokens, number of non-pad target tokens)``.
    """
    src, tgt = batch
    logits = model(src, shift_right(tgt, bos_id))  # (B, L, V)
    return sequence_cross_entropy(logits, tgt, pad_id, label_smoothing), int((tgt != pad_id).sum())


def lm_loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> tuple[Tensor, int]:
    """Next-token cross-entropy of a language model: ``model(x)`` against ``y`` (``y`` is ``x`` moved by one).

    Shape:
        batch: ``x (B, L)``, ``y (B, L)``.

    Returns:
        ``(mean loss in nats per token, B·L)``.
    """
    x, y = batch
    logits = model(x)  # (B, L, V)
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)), y.numel()


def to_device(batch: Any, device: torch.device | str) -> Any:
    """Move every tensor in a (nested) tuple/list/dict to ``device``; other values pass through."""
    if isinstance(batch, Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(b, device) for b in batch)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    return batch


# ----------------------------------------------------------------------------------------------- the loop

def _loss_output(out: object, step: int) -> tuple[Tensor, int]:
    """``loss_fn``'s return value, checked: a ``(loss, tokens)`` pair, a one-element loss tensor that has a
    gradient, and a token count that is a whole number ≥ 0 (an int or a one-element integer tensor).

    A bare tensor of two elements would otherwise unpack silently into a loss and a count. Only shapes, dtypes
    and flags are read for the loss (no host-device sync); the count is read as a Python int, as before.

    Raises:
        TypeError: ``out`` is not a pair, the loss is not a tensor, or the count is not an integer.
        ValueError: the loss has more than one element or no gradient, or the count is negative.
    """
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        got = f"a tensor of shape {tuple(out.shape)}" if isinstance(out, Tensor) else type_name(out)
        raise TypeError(f"loss_fn: expected a (loss, tokens) pair, got {got} at step {step}")
    loss, tokens = out
    if not isinstance(loss, Tensor):
        raise TypeError(f"loss_fn: expected (loss, tokens) with a 0-d loss tensor, got a {type_name(loss)} loss "
                        f"at step {step}")  # fmt: skip
    if loss.numel() != 1:
        raise ValueError(f"loss_fn: expected (loss, tokens) with a 0-d (mean) loss tensor, got a loss of shape "
                         f"{tuple(loss.shape)} at step {step}; reduce it, e.g. loss.mean()")  # fmt: skip
    if not loss.requires_grad:
        raise ValueError(f"loss_fn: expected a loss computed from the model's parameters (with a gradient), got "
                         f"one without at step {step} (detached, or computed under torch.no_grad?)")  # fmt: skip
    if isinstance(tokens, Tensor):
        if tokens.numel() != 1 or tokens.is_floating_point() or tokens.is_complex():
            raise TypeError(f"loss_fn: expected (loss, tokens) with tokens an int, got a {tokens.dtype} tensor of "
                            f"shape {tuple(tokens.shape)} at step {step}")  # fmt: skip
        count = int(tokens.item())
    elif is_int(tokens):
        count = int(tokens)
    else:
        raise TypeError(f"loss_fn: expected (loss, tokens) with tokens an int, got {type_name(tokens)} "
                        f"{tokens!r:.20} at step {step}")  # fmt: skip
    if count < 0:
        raise ValueError(f"loss_fn: expected (loss, tokens) with tokens ≥ 0, got {count} at step {step}")
    return loss.reshape(()), count

def train(
    model: nn.Module,
    batches: Iterable[Any],
    loss_fn: Callable[[nn.Module, Any], tuple[Tensor, int]],
    *,
    optimizer: torch.optim.Optimizer | None = None,
    lr: float = 1e-3,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    max_steps: int | None = None,
    max_epochs: float | None = None,
    time_budget_s: float | None = None,
    clip_grad_norm: float | None = 1.0,
    evaluate: Callable[[nn.Module], dict[str, float]] | None = None,
    eval_every: int | None = None,
    stop_when: Callable[[dict[str, float]], bool] | None = None,
    device: torch.device | str | None = None,
    seed: int | None = 0,
    progress: bool = True,
    desc: str = "train",
    clock: Callable[[], float] = time.perf_counter,
) -> History:
    """Train ``model`` until the first of ``max_steps``, ``max_epochs`` or ``time_budget_s`` runs out, or until
    ``stop_when`` accepts an evaluation.

    Each step: ``loss, n = loss_fn(model, batch)``, backward, clip the global gradient norm to
    ``clip_grad_norm`` (Pascanu et al. 2013), ``optimizer.step()``, ``scheduler.step()``. ``batches`` is
    iterated again for each epoch (a list, or a re-iterable such as :class:`tformer.data.text.PairBatches`, which
    reshuffles per epoch). ``evaluate(model)`` runs in ``eval()`` mode under ``torch.no_grad()`` every
    ``eval_every`` steps, or at the end of every epoch when ``eval_every`` is None, and once at the end; its time
    does not count against ``time_budget_s``.

    Args:
        model: any ``nn.Module``; moved to ``device``.
        batches: re-iterable of batches (tensors or nested tuples/dicts of tensors).
        loss_fn: ``(model, batch) -> (mean loss tensor, tokens in batch)``, e.g. :func:`seq2seq_loss`.
        optimizer: default Adam(lr, betas=(0.9, 0.98), eps=1e-9) as in Vaswani et al. §5.3.
        lr: learning rate of the default optimiser.
        scheduler: stepped once per optimiser step, e.g. :func:`warmup_schedule`.
        max_steps, max_epochs, time_budget_s: budgets (at least one); seconds of training time.
        clip_grad_norm: max global gradient norm, or None for no clipping.
        evaluate: ``model -> {metric: value}``.
        eval_every: steps between evaluations (None: once per epoch).
        stop_when: ``metrics -> bool``, called with each evaluation's metrics; training stops after the first
            evaluation for which it returns True (``stop_reason == "target_reached"``; the last entry of
            ``eval_metrics`` is the accepted one, and no further evaluation follows), e.g.
            ``lambda m: m["accuracy"] >= 0.99`` to train until a held-out accuracy is reached: the
            time-to-accuracy measure of DAWNBench (Coleman et al. 2017) and MLPerf Training (Mattson et al.
            2020), not patience-based early stopping (Prechelt 1998). When a step budget or the time budget
            runs out at the same step as the target is reached, the target wins. The score at the stop was
            chosen on the evaluation data, so it is not an unbiased estimate of that score. Needs
            ``evaluate``.
        device: default :func:`tformer.environment.get_device` (CUDA when present, else CPU).
        seed: seeds Python, NumPy and torch before the first step (dropout, data order); None leaves them.
        progress: show a tqdm text bar (on stderr, in Jupyter and in a terminal alike).
        desc: the progress bar's label.
        clock: what "seconds of training" means for the budget, ``train_time_s``, ``eval_seconds`` and
            ``tokens_per_s``: the wall clock (``time.perf_counter``, the default) or, for a fair budget on a
            CPU shared with other programs, this process's CPU seconds (``time.process_time``, which counts
            every thread of the process: on one thread and an idle machine the two agree).

    Returns:
        A :class:`History`.

    Raises:
        ValueError: if no budget is given, a budget, ``lr`` or ``clip_grad_norm`` is not positive, ``device``
            names no device this machine has, the batches are empty, ``loss_fn`` returns a loss of more than one
            element (a per-sample loss: take its mean; the message gives the shape), a loss without a gradient or
            a negative token count, the loss is not finite (the message names the step), or ``stop_when`` is
            given without ``evaluate``.
        TypeError: if ``max_steps`` is not an int, ``stop_when`` is given and not callable, ``clip_grad_norm`` is
            not a number, ``device`` not a str or ``torch.device``, or ``loss_fn`` does not return a
            ``(loss tensor, int tokens)`` pair.

    A one-shot iterator (a generator) as ``batches`` trains for one pass; when it is spent, training stops
    with ``stop_reason == "batches_exhausted"`` (pass a list or a re-iterable to train for several epochs).
    """
    check_flags(progress=progress)
    if max_steps is None and max_epochs is None and time_budget_s is None:
        raise ValueError("max_steps, max_epochs, time_budget_s: expected at least one budget, got none")
    if max_steps is not None:  # a count: 2.5 steps would silently run 3
        max_steps = check_int("max_steps", max_steps, 1)
    for name, value in (("max_epochs", max_epochs), ("time_budget_s", time_budget_s)):
        if value is not None:
            check_number(name, value, 0.0, open_min=True)
    if eval_every is not None:
        eval_every = check_int("eval_every", eval_every, 1)
    if stop_when is not None:
        if not callable(stop_when):
            raise TypeError(f"stop_when: expected a callable metrics -> bool, got {type(stop_when).__name__}")
        if evaluate is None:
            raise ValueError("stop_when: expected an evaluate function to read the metrics from, got evaluate=None")
    if optimizer is None:
        check_number("lr", lr, 0.0, open_min=True)
    if clip_grad_norm is not None:  # 0 would stop training and a negative norm reverse it, silently
        clip_grad_norm = check_number("clip_grad_norm", clip_grad_norm, 0.0, open_min=True)
    device = get_device() if device is None else check_device(device, "model to train")
    if seed is not None:
        seed_everything(seed)
    model.to(device)
    if optimizer is None:
        optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)

    history = History()
    wall_start, start = time.perf_counter(), clock()
    eval_time = 0.0

    def run_eval() -> bool:
        """Evaluate (if there is an ``evaluate``); return whether ``stop_when`` accepts the metrics."""
        nonlocal eval_time
        if evaluate is None:
            return False
        t0 = clock()
        trained_s = t0 - start - eval_time  # training seconds so far, before this evaluation's cost
        was_training = model.training
        model.eval()
        with torch.no_grad():
            metrics = {k: float(v) for k, v in evaluate(model).items()}
        model.train(was_training)
        history.eval_steps.append(history.steps)
        history.eval_metrics.append(metrics)
        history.eval_seconds.append(trained_s)
        eval_time += clock() - t0
        return stop_when is not None and bool(stop_when(metrics))

    def out_of_time() -> bool:
        return time_budget_s is not None and clock() - start - eval_time >= time_budget_s

    total = max_steps if max_steps is not None else None
    # mininterval: each refresh becomes a stored notebook output, so refresh every few seconds, not 10× a second.
    bar = tqdm(total=total, desc=desc, disable=not progress, leave=True, dynamic_ncols=True, mininterval=3.0)
    model.train()
    stop_reason = ""
    epoch = 0
    while not stop_reason:
        seen = 0
        n_batches = len(batches) if hasattr(batches, "__len__") else None  # type: ignore[arg-type]
        for batch in batches:
            seen += 1
            batch = to_device(batch, device)
            try:
                loss, n_tokens = _loss_output(loss_fn(model, batch), history.steps + 1)
            except (TypeError, ValueError):
                bar.close()
                raise
            if not torch.isfinite(loss):
                bar.close()
                raise ValueError(
                    f"loss: expected a finite loss at step {history.steps + 1} (lower the lr?), "
                    f"got {float(loss.detach())}"
                )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if clip_grad_norm is not None:
                nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)
            history.learning_rates.append(float(optimizer.param_groups[0]["lr"]))
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            history.steps += 1
            history.tokens += n_tokens
            history.losses.append(float(loss.detach()))
            history.epochs = epoch + (seen / n_batches if n_batches else 0.0)
            bar.update(1)
            if history.steps % 10 == 0 or history.steps == 1:
                bar.set_postfix(loss=f"{history.losses[-1]:.3f}", refresh=False)
            reached = eval_every is not None and history.steps % eval_every == 0 and run_eval()
            if reached:
                stop_reason = "target_reached"
            elif max_steps is not None and history.steps >= max_steps:
                stop_reason = "max_steps"
            elif max_epochs is not None and n_batches and history.epochs >= max_epochs:
                stop_reason = "max_epochs"
            elif out_of_time():
                stop_reason = "time_budget"
            if stop_reason:
                break
        if seen == 0 and history.steps > 0:  # a one-shot iterator (generator) is spent: stop, keep the history
            stop_reason = "batches_exhausted"
            break
        if seen == 0:
            bar.close()
            raise ValueError("batches: expected at least one batch to train on, got none")
        if seen == n_batches or not stop_reason:  # a full pass
            epoch += 1
            history.epochs = float(epoch)
            if not stop_reason and max_epochs is not None and epoch >= max_epochs:
                stop_reason = "max_epochs"
            if eval_every is None and not stop_reason and run_eval():
                stop_reason = "target_reached"
    bar.close()
    history.train_time_s = clock() - start - eval_time
    if evaluate is not None and (not history.eval_steps or history.eval_steps[-1] != history.steps):
        if run_eval():  # a budget ran out at the step the target was reached: the target wins, as above
            stop_reason = "target_reached"
    history.wall_time_s = time.perf_counter() - wall_start
    history.tokens_per_s = history.tokens / max(history.train_time_s, 1e-9)
    history.stop_reason = stop_reason
    return history


# ----------------------------------------------------------------------------------------------- checkpoints
def save_checkpoint(
    path: str | Path,
    model: nn.Module,
    *,
    optimizer: torch.optim.Optimizer | None = None,
    history: History | None = None,
    vocabs: dict[str, Vocab] | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Save weights (and optionally optimiser state, history, vocabularies, plain extras) with ``torch.save``.

    Everything is stored as tensors, numbers, strings, lists and dicts, so :func:`load_checkpoint` can use
    ``weights_only=True``.

    Raises:
        TypeError: if ``model`` is not an ``nn.Module`` (``path`` and ``model`` swapped, for example).
    """
    check_type("model", model, nn.Module, "an nn.Module")
    state: dict[str, Any] = {"model": model.state_dict()}
    if optimizer is not None:
        state["optimizer"] = optimizer.state_dict()
    if history is not None:
        state["history"] = history.to_dict()
    if vocabs:
        state["vocabs"] = {name: v.to_list() for name, v in vocabs.items()}
    if extra:
        state["extra"] = _plain(dict(extra), "extra")
    torch.save(state, Path(path))


def _plain(value: Any, where: str) -> Any:
    """``value`` with NumPy scalars as Python numbers, so that ``torch.load(weights_only=True)`` reads it back.

    Raises:
        TypeError: naming the entry (``extra['lr']``) that is not a tensor, number, str, bool, None, list, tuple
            or dict with str keys (an object ``weights_only`` would refuse to load).
    """
    if isinstance(value, (Tensor, str, bool, int, float)) or value is None:
        return value
    if is_number(value):  # np.float32(0.1), np.int64(3): stored as the Python number
        return value.item() if hasattr(value, "item") else float(value)  # type: ignore[union-attr]
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain(v, f"{where}[{k!r}]") for k, v in value.items()}
    raise TypeError(f"{where}: expected tensors, numbers, strs, lists and dicts with str keys (what a checkpoint "
                    f"loads safely), got {type(value).__name__}")


def _check_shared_weights(weights: dict[str, Tensor], model: nn.Module, path: str | Path) -> None:
    """Raise if keys that name one shared tensor of ``model`` hold different values in ``weights``."""
    names_by_tensor: dict[int, list[str]] = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        names_by_tensor.setdefault(id(tensor), []).append(name)
    for names in names_by_tensor.values():
        stored = [weights[n] for n in names if n in weights]
        first = stored[0] if stored else None
        if any(t.shape != first.shape or not torch.equal(t, first) for t in stored[1:]):
            raise ValueError(
                f"model: expected a checkpoint whose weights {names} are equal (this model ties them), got "
                f"different weights in {path} (saved from an untied model?)"
            )


def load_checkpoint(
    path: str | Path,
    model: nn.Module,
    *,
    optimizer: torch.optim.Optimizer | None = None,
    vocabs: dict[str, Vocab] | None = None,
    map_location: torch.device | str = "cpu",
) -> dict[str, Any]:
    """Load a :func:`save_checkpoint` file into ``model`` (and ``optimizer``) with ``weights_only=True``.

    Args:
        vocabs: the vocabularies the caller will encode with; each is compared with the one stored under the
            same name, so a model is never fed ids from another vocabulary.

    Returns:
        The stored dict (``"history"`` as a :class:`History` when present, ``"extra"``, ``"vocabs"`` as
        :class:`Vocab`).

    Raises:
        ValueError: if a given vocabulary differs from (or is missing in) the stored one, the weights do not
            fit the model (different sizes, e.g. a different vocabulary size), or two stored weights that the
            model shares (tied embeddings) differ: an untied checkpoint would otherwise load silently into a
            tied model, the last key overwriting the first.
    """
    state = torch.load(Path(path), map_location=map_location, weights_only=True)
    stored = {name: Vocab(tokens) for name, tokens in state.get("vocabs", {}).items()}
    for name, vocab in (vocabs or {}).items():
        if name not in stored:
            raise ValueError(
                f"vocabs: expected names of the vocabularies stored in {path} {sorted(stored)}, got {name!r}"
            )
        if stored[name] != vocab:
            raise ValueError(
                f"vocabs: expected the checkpoint's vocabulary {name!r} ({len(stored[name])} tokens; encode with "
                f"it), got a mismatched vocabulary of {len(vocab)} tokens"
            )
    _check_shared_weights(state["model"], model, path)
    try:
        model.load_state_dict(state["model"])
    except RuntimeError as err:
        raise ValueError(
            f"model: expected a model the checkpoint {path} fits (mismatched sizes?), got this error: {err}"
        ) from err
    if optimizer is not None and "optimizer" in state:
        optimizer.load_state_dict(state["optimizer"])
    if "history" in state:
        state["history"] = History.from_dict(state["history"])
    state["vocabs"] = stored
    return state
