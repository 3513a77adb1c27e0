"""Chapter 17's training pieces: the time-based cosine schedule, the validation loss and a short training run."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from tformer.book.poet import (
    CONTEXT,
    poem_data,
    poet_config,
    time_cosine_schedule,
    train_poet,
    validation_loss,
)


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def factors(schedule: torch.optim.lr_scheduler.LambdaLR, clock: FakeClock, times: list[float]) -> list[float]:
    out = []
    for t in times:
        clock.now = 100.0 + t
        out.append(schedule.lr_lambdas[0](5))
    return out


def test_the_schedule_follows_the_seconds_spent_not_the_steps() -> None:
    clock = FakeClock()
    optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0)
    schedule = time_cosine_schedule(optimizer, 100.0, clock, warmup_share=0.1)
    got = factors(schedule, clock, [5.0, 10.0, 55.0, 100.0, 250.0])
    # half-way through the warm-up; its end; half-way through the cosine (cos(pi/2) = 0); the end; past it
    assert got == pytest.approx([0.5, 1.0, 0.5, 0.0, 0.0], abs=1e-12)
    clock.now = 100.0
    floored = time_cosine_schedule(optimizer, 100.0, clock, warmup_steps=10, floor=0.1)
    clock.now = 200.0  # the budget is spent
    assert floored.lr_lambdas[0](3) == pytest.approx(0.4)  # step 3 of 10 warm-up steps: (3 + 1) / 10
    assert floored.lr_lambdas[0](50) == pytest.approx(0.1)


@pytest.mark.parametrize(("settings", "words"), [({"budget_s": 0.0}, "budget_s"), ({"warmup_share": 1.0}, "warmup_share"),
                                                 ({"floor": -0.1}, "floor"), ({"warmup_steps": 0}, "warmup_steps")])
def test_the_schedule_refuses_bad_settings(settings: dict, words: str) -> None:
    optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0)
    with pytest.raises(ValueError, match=words):
        time_cosine_schedule(optimizer, **({"budget_s": 10.0, "clock": FakeClock()} | settings))


class Uniform(nn.Module):
    """Logits of zeros: every token equally likely, so the loss is ln V exactly."""

    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.vocab_size = vocab_size

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return torch.zeros(*tokens.shape, self.vocab_size)


def test_validation_loss_of_a_uniform_model_is_ln_v_and_reads_whole_windows() -> None:
    ids = torch.arange(10 * CONTEXT + 5) % 50
    assert validation_loss(Uniform(50), ids) == pytest.approx(math.log(50), abs=1e-6)
    model = nn.Sequential(nn.Embedding(50, 8), nn.Linear(8, 50))
    torch.manual_seed(0)
    x = ids[: 10 * CONTEXT].view(10, CONTEXT)
    y = ids[1 : 10 * CONTEXT + 1].view(10, CONTEXT)
    by_hand = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten()).item()
    assert validation_loss(model, ids, batch_size=3) == pytest.approx(by_hand, rel=1e-6)  # batches of 3, 3, 3, 1


def test_a_short_run_learns_and_stops_on_its_budget() -> None:
    data = poem_data()
    assert len(data.vocab) == poet_config(len(data.vocab)).vocab_size == 3006
    torch.set_num_threads(1)
    model, history = train_poet(data, seed=0, budget_s=6.0, progress=False)
    assert history.stop_reason == "time_budget" and history.steps >= 8
    assert not model.training
    # 8+ steps take the loss from about ln V (8.0) well down: the punctuation alone is a quarter of the text
    assert history.losses[-1] < history.losses[0] - 0.5
    assert history.eval_metrics[-1]["val_loss"] < math.log(len(data.vocab))
    assert history.learning_rates[-1] < 0.5 * max(history.learning_rates)  # the cosine is nearly spent


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda d: validation_loss(Uniform(50), d.validation[:64]), ValueError, "ids: expected more than context=64"),
    (lambda d: validation_loss(Uniform(50), torch.zeros(0, dtype=torch.long)), ValueError, "ids: expected more"),
    (lambda d: validation_loss(Uniform(50), d.validation, batch_size=0), ValueError, "batch_size"),
    (lambda d: validation_loss(Uniform(50), d.validation, context=0), ValueError, "context"),
    (lambda d: validation_loss(Uniform(50), d.validation.view(1, -1)), ValueError, "ids: expected shape"),
    (lambda d: validation_loss(None, d.validation), TypeError, "model: expected Module"),
    (lambda d: train_poet(d, seed=0, budget_s=float("inf")), ValueError, "budget_s: expected a finite"),
    (lambda d: train_poet(d, seed=2**64, budget_s=1.0), ValueError, "seed: expected"),
    (lambda d: train_poet(d, seed=0, budget_s=1.0, device="banana"), ValueError, "device: expected"),
    (lambda d: train_poet(d, seed=0, budget_s=1.0, device="meta"), ValueError, "device: expected 'cpu'"),
    (lambda d: train_poet(d.train, seed=0, budget_s=1.0), TypeError, "data: expected PoemData"),
    (lambda d: time_cosine_schedule(None, 1.0, FakeClock()), TypeError, "optimizer: expected Optimizer"),
    (lambda d: train_poet(d, seed=0, budget_s=1.0, progress=1), TypeError, r"^progress: expected a bool, got int$"),
    (lambda d: train_poet(d, seed=0, budget_s=1.0, device=None), TypeError,
     r"^device: expected a str or torch.device, got NoneType$"),
], ids=["one window", "empty", "batch 0", "context 0", "2-D ids", "no model", "endless budget", "huge seed",
        "unknown device", "meta", "a stream as data", "no optimizer", "progress 1", "no device"])
def test_bad_input_is_refused_at_the_door(call, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        call(poem_data())


def test_int32_ids_score_as_int64() -> None:
    ids = torch.arange(3 * CONTEXT + 1) % 50
    assert validation_loss(Uniform(50), ids.int()) == validation_loss(Uniform(50), ids)
