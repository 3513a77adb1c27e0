"""The training loop, the warm-up schedule, checkpoints, and a tiny translation run that must learn."""

from __future__ import annotations

import math
import time

import pytest
import torch
from torch import nn

from tformer.data.corpus import generate_corpus
from tformer.data.tasks import copy_task, task_vocab_size
from tformer.data.text import PairBatches, Vocab
from tformer.models import Transformer
from tformer.training.train import (
    History,
    load_checkpoint,
    noam_lr,
    save_checkpoint,
    seq2seq_loss,
    train,
    warmup_schedule,
)

TINY = dict(d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, d_ff=32, dropout=0.0, max_len=8)
SMALL = dict(d_model=32, num_heads=4, num_encoder_layers=1, num_decoder_layers=1, d_ff=64, dropout=0.0, max_len=16)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """The tiny training runs are faster on one thread (no OpenMP hand-offs); restore afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_noam_closed_form():
    d, w = 512, 4000
    # Vaswani et al. §5.3: lr = d^-0.5 · min(step^-0.5, step · w^-1.5)
    assert noam_lr(1, d, w) == pytest.approx(512**-0.5 * 4000**-1.5, rel=1e-12)
    assert noam_lr(w, d, w) == pytest.approx((512 * 4000) ** -0.5, rel=1e-12)  # the peak
    assert noam_lr(4 * w, d, w) == pytest.approx(0.5 * (512 * 4000) ** -0.5, rel=1e-12)  # 1/√step decay
    assert noam_lr(0, d, w) == noam_lr(1, d, w)
    rates = [noam_lr(s, d, w) for s in range(1, 3 * w)]
    assert max(rates) == rates[w - 1]
    with pytest.raises(ValueError, match="warmup_steps"):
        noam_lr(1, d, 0)


def test_warmup_schedule_sets_the_paper_rate():
    param = nn.Parameter(torch.zeros(3))
    opt = torch.optim.SGD([param], lr=0.5)
    sched = warmup_schedule(opt, d_model=64, warmup_steps=10, factor=2.0)
    seen = []
    for _ in range(25):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    expected = [2.0 * 64**-0.5 * min(s**-0.5, s * 10**-1.5) for s in range(1, 26)]
    torch.testing.assert_close(torch.tensor(seen, dtype=torch.float64), torch.tensor(expected, dtype=torch.float64),
                               rtol=1e-12, atol=0)  # fmt: skip


class _Linear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Linear(4, 1)

    def forward(self, x):
        return self.w(x)


def _mse(model, batch):
    x, y = batch
    return nn.functional.mse_loss(model(x), y), x.shape[0]


def _regression_batches(n=8):
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(16, 4, generator=g) for _ in range(n)]
    return [(x, x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])) for x in xs]


def test_history_budgets_and_evaluation(capsys):
    batches = _regression_batches()
    calls = []

    def evaluate(model):
        calls.append(model.training)
        return {"val": 1.0}

    h = train(
        _Linear(), batches, _mse, lr=1e-2, max_epochs=2, evaluate=evaluate, device="cpu", progress=False
    )
    assert h.steps == 16 and h.stop_reason == "max_epochs" and h.epochs == 2.0
    assert len(h.losses) == len(h.learning_rates) == 16
    assert h.eval_steps == [8, 16] and calls == [False, False]  # per epoch, in eval mode
    assert h.metric("val") == [1.0, 1.0]
    assert h.tokens == 16 * 16 and h.tokens_per_s > 0 and h.wall_time_s >= h.train_time_s > 0
    h = train(
        _Linear(), batches, _mse, max_steps=5, eval_every=2, evaluate=evaluate, progress=False, device="cpu"
    )
    assert h.steps == 5 and h.stop_reason == "max_steps" and h.eval_steps == [2, 4, 5]
    assert len(h.eval_seconds) == 3 and h.eval_seconds == sorted(h.eval_seconds)
    assert 0 < h.eval_seconds[0] and h.eval_seconds[-1] == pytest.approx(h.train_time_s, abs=0.05)
    h = train(_Linear(), batches, _mse, time_budget_s=0.05, progress=False, device="cpu")
    assert h.stop_reason == "time_budget" and 0.05 <= h.train_time_s < 5
    assert History.from_dict(h.to_dict()) == h
    assert capsys.readouterr().out == ""  # library code never prints


def _counting_evaluate():
    """An ``evaluate`` whose one metric ``n`` counts the evaluations so far (1, 2, 3, ...)."""
    calls = []

    def evaluate(model):
        calls.append(1)
        return {"n": float(len(calls))}

    return evaluate


def test_stop_when_ends_training_at_the_first_accepted_evaluation():
    # The metric counts evaluations; stopping at the third one (step 6 with eval_every=2) leaves the history of
    # exactly those 6 steps, the same as a run with max_steps=6: stopping early changes nothing before the stop.
    seen = []

    def evaluate(model):
        seen.append(len(seen) + 1)
        return {"evaluations": float(len(seen))}

    h = train(_Linear(), _regression_batches(), _mse, max_steps=100, eval_every=2, evaluate=evaluate,
              stop_when=lambda m: m["evaluations"] >= 3, progress=False, device="cpu")
    assert h.stop_reason == "target_reached" and h.steps == 6 and h.eval_steps == [2, 4, 6] and seen == [1, 2, 3]
    plain = train(_Linear(), _regression_batches(), _mse, max_steps=6, progress=False, device="cpu")
    assert h.losses == plain.losses
    never = train(_Linear(), _regression_batches(), _mse, max_steps=5, eval_every=2, evaluate=lambda m: {"v": 0.0},
                  stop_when=lambda m: False, progress=False, device="cpu")
    assert never.stop_reason == "max_steps" and never.eval_steps == [2, 4, 5]
    per_epoch = train(_Linear(), _regression_batches(), _mse, max_epochs=5, evaluate=lambda m: {"v": 1.0},
                      stop_when=lambda m: m["v"] > 0.5, progress=False, device="cpu")
    assert per_epoch.stop_reason == "target_reached" and per_epoch.steps == 8 and per_epoch.eval_steps == [8]
    # Ties: the target wins over a budget that runs out at the same step, whichever evaluation sees it.
    tie = train(_Linear(), _regression_batches(), _mse, max_steps=4, eval_every=2, evaluate=_counting_evaluate(),
                stop_when=lambda m: m["n"] >= 2, progress=False, device="cpu")
    assert tie.stop_reason == "target_reached" and tie.eval_steps == [2, 4] and tie.steps == 4
    epochs_tie = train(_Linear(), _regression_batches(), _mse, max_epochs=1, evaluate=lambda m: {"v": 1.0},
                       stop_when=lambda m: True, progress=False, device="cpu")
    assert epochs_tie.stop_reason == "target_reached" and epochs_tie.eval_steps == [8]
    assert len(epochs_tie.eval_metrics) == 1
    last_only = train(_Linear(), _regression_batches(), _mse, max_steps=5, eval_every=2, evaluate=_counting_evaluate(),
                      stop_when=lambda m: m["n"] >= 3, progress=False, device="cpu")
    assert last_only.stop_reason == "target_reached" and last_only.eval_steps == [2, 4, 5]  # the off-cadence one
    ticks = iter(range(1000))  # a fake clock: every reading is one second later
    timed = train(_Linear(), _regression_batches(), _mse, time_budget_s=3.0, eval_every=100,
                  evaluate=lambda m: {"v": 1.0}, stop_when=lambda m: True, clock=lambda: float(next(ticks)),
                  progress=False, device="cpu")
    assert timed.stop_reason == "target_reached" and timed.eval_steps == [timed.steps] and timed.steps < 100
    with pytest.raises(ValueError, match="stop_when"):
        train(_Linear(), _regression_batches(), _mse, max_steps=2, stop_when=lambda m: True, progress=False,
              device="cpu")
    with pytest.raises(TypeError, match="stop_when"):
        train(_Linear(), _regression_batches(), _mse, max_steps=2, evaluate=lambda m: {"v": 0.0}, stop_when=0.99,
              progress=False, device="cpu")


def test_eval_seconds_exclude_evaluation_time():
    # Each evaluation sleeps 0.2 s; the training clock at the evaluations must not include those sleeps.
    def slow_evaluate(model):
        time.sleep(0.2)
        return {"val": 0.0}

    h = train(_Linear(), _regression_batches(), _mse, max_steps=6, eval_every=2, evaluate=slow_evaluate,
              progress=False, device="cpu")
    assert h.eval_steps == [2, 4, 6] and h.wall_time_s >= 0.6
    assert h.eval_seconds[-1] < 0.15 and h.eval_seconds[-1] <= h.train_time_s + 1e-9


def test_the_budget_reads_the_given_clock():
    # A fake clock that advances 1 s per reading: the budget, train_time_s and tokens_per_s all use it, while
    # wall_time_s stays on the real wall clock (a fraction of a second here).
    ticks = iter(range(10**6))
    h = train(_Linear(), _regression_batches(), _mse, time_budget_s=5, clock=lambda: float(next(ticks)),
              progress=False, device="cpu")
    assert h.stop_reason == "time_budget" and h.steps == 5 and h.train_time_s == 6.0
    assert h.tokens_per_s == h.tokens / 6.0 and h.wall_time_s < 5


def test_gradient_clipping_bounds_the_update():
    model = _Linear()
    before = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    batch = _regression_batches(1)
    train(model, batch, _mse, optimizer=opt, max_steps=1, clip_grad_norm=1e-3, progress=False, device="cpu")
    step = torch.cat([(p.detach() - b).flatten() for p, b in zip(model.parameters(), before, strict=True)])
    # plain SGD with lr 1: the update is the clipped gradient, whose global norm is exactly the threshold
    assert float(step.norm()) == pytest.approx(1e-3, rel=1e-5)


def test_seeded_runs_repeat():
    def run():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 32), nn.Dropout(0.3), nn.Linear(32, 1))
        return train(
            model, _regression_batches(), _mse, max_steps=10, seed=3, progress=False, device="cpu"
        ).losses

    assert run() == run()


def test_bad_input():
    with pytest.raises(ValueError, match=r"^max_steps, max_epochs, time_budget_s: expected at least one budget, got none$"):
        train(_Linear(), _regression_batches(), _mse, progress=False)
    with pytest.raises(ValueError, match=r"^max_steps: expected a positive int, got 0$"):
        train(_Linear(), _regression_batches(), _mse, max_steps=0, progress=False)
    with pytest.raises(TypeError, match=r"^max_steps: expected an int, got float$"):  # 2.5 used to run 3 steps
        train(_Linear(), _regression_batches(), _mse, max_steps=2.5, progress=False)
    with pytest.raises(ValueError, match=r"batches: expected at least one batch to train on, got none"):
        train(_Linear(), [], _mse, max_steps=3, progress=False, device="cpu")
    nan_batches = [(torch.full((2, 4), float("nan")), torch.zeros(2, 1))]
    with pytest.raises(ValueError, match=r"loss: expected a finite loss at step 1 \(lower the lr\?\), got nan"):
        train(_Linear(), nan_batches, _mse, max_steps=3, progress=False, device="cpu")


def test_a_per_sample_loss_is_refused_naming_loss_fn():  # breaker: torch's "grad can be implicitly created ..."
    def per_sample(model, batch):
        x, y = batch
        return ((model(x) - y) ** 2).mean(dim=1), x.shape[0]  # (B,): not reduced over the batch

    model = _Linear()
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(ValueError, match=r"^loss_fn: expected \(loss, tokens\) with a 0-d \(mean\) loss tensor, got a "
                                         r"loss of shape \(16,\) at step 1; reduce it, e.g. loss.mean\(\)$"):
        train(model, _regression_batches(), per_sample, max_steps=3, progress=False, device="cpu")
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))  # refused before a step
    with pytest.raises(TypeError, match=r"^loss_fn: expected \(loss, tokens\) with a 0-d loss tensor, got a float "):
        train(model, _regression_batches(), lambda m, b: (1.0, 16), max_steps=3, progress=False, device="cpu")



@pytest.mark.parametrize(
    ("loss_fn", "error", "message"),
    [
        # a bare (2,) tensor used to unpack silently into loss = l[0], tokens = int(l[1])
        (lambda m, b: ((m(b[0]) - b[1]) ** 2).mean(dim=1)[:2], TypeError,
         r"^loss_fn: expected a \(loss, tokens\) pair, got a tensor of shape \(2,\) at step 1$"),
        (lambda m, b: ((m(b[0]) - b[1]) ** 2).mean(), TypeError, r"^loss_fn: expected a \(loss, tokens\) pair, got a "
         r"tensor of shape \(\) at step 1$"),
        (lambda m, b: (((m(b[0]) - b[1]) ** 2).mean().detach(), 16), ValueError,
         r"^loss_fn: expected a loss computed from the model's parameters \(with a gradient\)"),
        (lambda m, b: (((m(b[0]) - b[1]) ** 2).mean(), None), TypeError,
         r"^loss_fn: expected \(loss, tokens\) with tokens an int, got NoneType"),
        (lambda m, b: (((m(b[0]) - b[1]) ** 2).mean(), 7.9), TypeError, "with tokens an int, got float 7.9"),
        (lambda m, b: (((m(b[0]) - b[1]) ** 2).mean(), torch.ones(16, dtype=torch.long)), TypeError,
         r"with tokens an int, got a torch.int64 tensor of shape \(16,\)"),
        (lambda m, b: (((m(b[0]) - b[1]) ** 2).mean(), -5), ValueError, "with tokens ≥ 0, got -5 at step 1"),
    ],
)  # fmt: skip
def test_a_malformed_loss_output_is_refused_naming_loss_fn(loss_fn, error, message):  # breaker: silent or torch's
    model = _Linear()
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(error, match=message):
        train(model, _regression_batches(), loss_fn, max_steps=3, progress=False, device="cpu")
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))  # refused before a step


def test_a_one_element_loss_and_a_tensor_count_are_accepted():  # what torch's backward accepts, train accepts
    def shaped(model, batch):
        x, y = batch
        return ((model(x) - y) ** 2).mean().reshape(1), torch.tensor(x.shape[0])

    history = train(_Linear(), _regression_batches(), shaped, max_steps=3, progress=False, device="cpu")
    assert history.steps == 3 and history.tokens == 3 * 16 and all(type(v) is float for v in history.losses)


def test_checkpoint_round_trip_and_mismatches(tmp_path):
    torch.manual_seed(0)
    src_vocab, tgt_vocab = Vocab(["the", "cat"]), Vocab(["猫"])
    model = Transformer(len(src_vocab), len(tgt_vocab), **TINY)
    history = History(losses=[2.0, 1.0], steps=2)
    path = tmp_path / "ckpt.pt"
    save_checkpoint(
        path, model, history=history, vocabs={"src": src_vocab, "tgt": tgt_vocab}, extra={"seed": 0}
    )
    assert set(torch.load(path, weights_only=True)) == {"model", "history", "vocabs", "extra"}
    fresh = Transformer(len(src_vocab), len(tgt_vocab), **TINY)
    state = load_checkpoint(path, fresh, vocabs={"src": src_vocab, "tgt": tgt_vocab})
    for (name, a), b in zip(model.state_dict().items(), fresh.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=name)
    assert (
        state["history"] == history and state["extra"] == {"seed": 0} and state["vocabs"]["tgt"] == tgt_vocab
    )
    with pytest.raises(ValueError, match="mismatched vocabulary"):
        load_checkpoint(path, fresh, vocabs={"src": Vocab(["the", "dog"])})
    bigger = Transformer(len(src_vocab) + 1, len(tgt_vocab), **TINY)
    with pytest.raises(ValueError, match=r"model: expected a model the checkpoint .* fits \(mismatched sizes\?\)"):
        load_checkpoint(path, bigger)


def test_untied_checkpoint_into_a_tied_model_is_refused(tmp_path):  # breaker 4: used to load silently
    from tformer.models import DecoderOnlyConfig, DecoderOnlyTransformer

    cfg = DecoderOnlyConfig(10, d_model=8, num_heads=2, d_ff=16, num_layers=1)
    untied, tied = DecoderOnlyTransformer(cfg), DecoderOnlyTransformer(cfg, tie_embeddings=True)
    save_checkpoint(tmp_path / "untied.pt", untied)
    with pytest.raises(ValueError, match=r"model: expected a checkpoint whose weights .* are equal \(this model ties"):
        load_checkpoint(tmp_path / "untied.pt", tied)
    save_checkpoint(tmp_path / "tied.pt", tied)
    load_checkpoint(tmp_path / "tied.pt", DecoderOnlyTransformer(cfg, tie_embeddings=True))  # tied -> tied loads
    load_checkpoint(tmp_path / "tied.pt", DecoderOnlyTransformer(cfg))  # tied -> untied: both copies equal


def test_a_spent_generator_stops_training_and_keeps_the_history():  # breaker 10
    batches = _regression_batches()
    history = train(_Linear(), (b for b in batches), _mse, max_steps=10 * len(batches), progress=False, device="cpu")
    assert history.steps == len(batches) and history.stop_reason == "batches_exhausted"
    with pytest.raises(ValueError, match=r"lr: expected a number > 0, got -1.0"):
        train(_Linear(), batches, _mse, max_steps=1, lr=-1.0, progress=False, device="cpu")


def test_tiny_translation_run_learns():
    corpus = generate_corpus(2_000, seed=0, validation_size=100, test_size=100, combinations_size=10)
    pairs = [p for p in corpus.train if len(p[0].split()) <= 8]
    src_vocab = Vocab.build(en.split() for en, _ in pairs)
    tgt_vocab = Vocab.build(zh.split() for _, zh in pairs)
    batches = PairBatches(
        [src_vocab.encode(en.split()) for en, _ in pairs],
        [tgt_vocab.encode(zh.split()) for _, zh in pairs],
        32,
    )
    torch.manual_seed(0)
    model = Transformer(len(src_vocab), len(tgt_vocab), **{**SMALL, "max_len": 32})
    h = train(model, batches, seq2seq_loss, lr=3e-3, max_steps=60, progress=False, device="cpu")
    first, last = sum(h.losses[:5]) / 5, sum(h.losses[-5:]) / 5
    assert last < 0.5 * first, (first, last)
    assert math.isfinite(last)


def test_copy_task_batches_train():
    pairs = copy_task(256, (3, 6), num_symbols=6, seed=0)
    batches = PairBatches([s for s, _ in pairs], [t for _, t in pairs], 32)
    torch.manual_seed(0)
    model = Transformer(task_vocab_size(6), task_vocab_size(6), **SMALL)
    h = train(model, batches, seq2seq_loss, lr=3e-3, max_steps=40, progress=False, device="cpu")
    assert sum(h.losses[-5:]) / 5 < 0.6 * sum(h.losses[:5]) / 5


def test_training_clock_is_chosen_once_by_the_thread_count() -> None:
    from tformer.training.train import training_clock

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        clock = training_clock("cpu")
        assert clock is time.process_time  # CPU time with one thread
        start_wall, start = time.perf_counter(), clock()
        time.sleep(0.2)  # sleeping costs no CPU time: the one-thread clock must barely move
        assert clock() - start < 0.1 < time.perf_counter() - start_wall
        torch.set_num_threads(2)
        assert clock() - start < 0.1  # the same clock after the thread count changed: no mixing
        assert training_clock("cpu") is time.perf_counter  # a new clock follows the new count
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize(
    ("device", "error", "message"),
    [(None, TypeError, "device: expected a str or torch.device, got NoneType"),
     (5.0, TypeError, "device: expected a str"),
     ("gpu", ValueError, "device: expected a device name"),
     ("meta", ValueError, "device: expected 'cpu', 'cuda' or 'mps', got 'meta'")],
)  # fmt: skip
def test_training_clock_bad_device(device: object, error: type, message: str) -> None:
    from tformer.training.train import training_clock

    with pytest.raises(error, match=message):
        training_clock(device)  # type: ignore[arg-type]


def test_step_cost_ratios_divide_by_the_reference_in_each_round() -> None:
    from tformer.training.train import step_cost_ratios

    now, calls = [0.0], []  # a clock that moves only when a step says so: exact, machine-independent timings
    reference_costs = iter([2.0, 3.0, 4.0])  # the machine slows down from round to round ...

    def reference() -> None:
        calls.append("tf")
        now.append(now[-1] + next(reference_costs))

    def other() -> None:  # ... and the other model keeps costing 1.5 reference steps
        calls.append("rnn")
        now.append(now[-1] + 1.5 * (now[-1] - now[-2]))

    ratios = step_cost_ratios({"tf": reference, "rnn": other}, "tf", clock=lambda: now[-1], rounds=3)
    assert ratios["tf"] == [1.0, 1.0, 1.0]
    assert ratios["rnn"] == pytest.approx([1.5, 1.5, 1.5], abs=1e-12)
    assert calls == ["tf", "rnn"] * 3  # interleaved: each round times every entry once, in order


def test_step_cost_ratios_real_work_orders_the_costs() -> None:
    from tformer.training.train import step_cost_ratios

    a, b = torch.randn(64, 64), torch.randn(256, 256)
    steps = {"small": lambda: [a @ a for _ in range(20)], "large": lambda: [b @ b for _ in range(20)]}
    ratios = step_cost_ratios(steps, "small", clock=time.perf_counter, rounds=5)
    assert len(ratios["large"]) == 5
    assert sorted(ratios["large"])[2] > 4  # 64x the multiply-adds; at least 4x the time on any machine


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [({"steps": {}}, ValueError, r"^steps: expected a non-empty mapping of name -> callable, got an empty dict$"),
     ({"steps": [lambda: None]}, TypeError, r"^steps: expected a non-empty mapping of name -> callable, got list$"),
     ({"clock": lambda: "now"}, TypeError, r"^clock: expected a callable returning seconds as a number, got str$"),
     ({"steps": {"a": 3}}, TypeError, r"steps\['a'\]: expected a callable, got int"),
     ({"reference": "b"}, ValueError, r"reference: expected one of \['a'\], got 'b'"),
     ({"clock": 1.0}, TypeError, "clock: expected a callable"),
     ({"rounds": 0}, ValueError, "rounds"),
     ({"rounds": 2.0}, TypeError, "rounds"),
     ({"clock": lambda: 0.0}, ValueError, r"steps\['a'\]: expected a positive, finite time per call, got 0.0 s")],
)  # fmt: skip
def test_step_cost_ratios_bad_input(kwargs: dict, error: type, message: str) -> None:
    from tformer.training.train import step_cost_ratios

    args = {"steps": {"a": lambda: None}, "reference": "a", "clock": time.perf_counter, **kwargs}
    with pytest.raises(error, match=message):
        step_cost_ratios(args.pop("steps"), args.pop("reference"), **args)


def test_step_cost_ratios_are_python_floats_on_a_numpy_clock() -> None:  # breaker: np.float64 ratios came back
    import numpy as np

    from tformer.training.train import step_cost_ratios

    now = [0.0]

    def step(cost: float) -> None:
        now[0] += cost

    steps = {"tf": lambda: step(2.0), "rnn": lambda: step(3.0)}
    ratios = step_cost_ratios(steps, "tf", clock=lambda: np.float64(now[0]), rounds=2)
    assert ratios == {"tf": [1.0, 1.0], "rnn": [1.5, 1.5]}
    assert all(type(r) is float for rs in ratios.values() for r in rs)


@pytest.mark.parametrize("cost", [0.0, -1.0, math.nan])
def test_step_cost_ratios_refuse_an_entry_that_took_no_time(cost: float) -> None:
    from tformer.training.train import step_cost_ratios

    now = [0.0]

    def reference() -> None:
        now[0] += 1.0

    def other() -> None:
        now[0] += cost

    with pytest.raises(ValueError, match=r"steps\['rnn'\]: expected a positive, finite time per call, got .* "
                                         r"s on this clock; give each call more work"):
        step_cost_ratios({"tf": reference, "rnn": other}, "tf", clock=lambda: now[0], rounds=2)
    with pytest.raises(TypeError, match=r"reference: expected a str \(a key of steps\), got list"):
        step_cost_ratios({"tf": reference}, ["tf"], clock=lambda: now[0])  # type: ignore[arg-type]


@pytest.mark.parametrize("device", ["cuda", "mps"])
def test_training_clock_refuses_a_device_this_machine_lacks(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from tformer.training.train import training_clock

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(ValueError, match=rf"device: expected a device this machine has, got '{device}' \(not available"):
        training_clock(device)  # used to fail only at the clock's first reading
