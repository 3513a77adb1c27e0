"""Tests for tformer.analysis.complexity: FLOP formulas against counts by definition and against torch's FlopCounterMode,
memory formulas against the bytes of real tensors, and the measuring helpers on cases with known answers."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from tformer.analysis.complexity import (
    attention_matrix_bytes,
    conv1d_flops,
    feed_forward_flops,
    kv_cache_bytes,
    loglog_slope,
    matmul_flops,
    matmul_gflops,
    maximum_path_length,
    median_time,
    median_times,
    peak_tensor_bytes,
    rnn_flops,
    self_attention_flops,
    sequential_operations,
    sweep_times,
)
from tformer.attention import KVCache, MultiHeadAttention
from tformer.baselines.rnn import GRU, LSTM, RNN
from tformer.functional import scaled_dot_product_attention
from tformer.layers import FeedForward


def _counted(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def test_matmul_flops_by_definition() -> None:
    # Count the multiplies and adds of a naive triple loop: each of m·n outputs takes k multiplies and k adds
    # (the first add accumulates into zero, as FlopCounterMode counts it).
    m, k, n = 3, 5, 4
    ops = sum(2 for _ in range(m) for _ in range(n) for _ in range(k))
    assert matmul_flops(m, k, n) == ops == 120
    assert _counted(lambda: torch.randn(m, k) @ torch.randn(k, n)) == ops


@pytest.mark.parametrize(("n", "d", "heads"), [(7, 16, 4), (12, 8, 1)])
def test_self_attention_flops_match_counter(n: int, d: int, heads: int) -> None:
    q = torch.randn(1, heads, n, d // heads)
    assert _counted(lambda: scaled_dot_product_attention(q, q, q)) == self_attention_flops(n, d) == 4 * n * n * d
    mha = MultiHeadAttention(d, heads)
    x = torch.randn(1, n, d)
    assert _counted(lambda: mha(x, x, x)) == self_attention_flops(n, d, projections=True)
    assert self_attention_flops(n, d, projections=True) == 4 * n * n * d + 8 * n * d * d


@pytest.mark.parametrize(("cls", "gates"), [(RNN, 1), (LSTM, 4), (GRU, 3)])
def test_rnn_flops_match_counter(cls: type, gates: int) -> None:
    n, d, d_in = 6, 8, 5
    x = torch.randn(1, n, d_in)
    assert _counted(lambda: cls(d_in, d)(x)) == rnn_flops(n, d, gates=gates, input_size=d_in)
    assert rnn_flops(n, d, gates=gates) == gates * 4 * n * d * d
    assert _counted(lambda: nn.RNN(d, d, batch_first=True)(torch.randn(1, n, d))) == rnn_flops(n, d)


def test_conv_and_ffn_flops_match_counter() -> None:
    n, d, k = 9, 6, 3
    conv = nn.Conv1d(d, d, k, padding=k // 2)
    assert _counted(lambda: conv(torch.randn(1, d, n))) == conv1d_flops(n, d, k) == 2 * k * n * d * d
    ffn = FeedForward(d, 4 * d)
    assert _counted(lambda: ffn(torch.randn(1, n, d))) == feed_forward_flops(n, d, 4 * d)


def test_attention_matrix_bytes_equals_weights_tensor() -> None:
    q = torch.randn(2, 3, 5, 4)
    k = torch.randn(2, 3, 7, 4)
    _, weights = scaled_dot_product_attention(q, k, k)
    expected = weights.numel() * weights.element_size()
    assert attention_matrix_bytes(5, 7, num_heads=3, batch=2) == expected
    # GPT-2's context: 1024² = 1,048,576 weights, 4 MiB in float32, per head per layer.
    assert attention_matrix_bytes(1024) == 1024 * 1024 * 4 == 4 * 2**20
    assert attention_matrix_bytes(2048) == 4 * attention_matrix_bytes(1024)
    assert attention_matrix_bytes(1024, dtype=torch.float16) == 2 * 2**20


def test_kv_cache_bytes_equals_cache_tensors() -> None:
    mha = MultiHeadAttention(16, 4).eval()
    cache = KVCache()
    with torch.no_grad():
        for _ in range(5):
            x = torch.randn(2, 1, 16)
            mha(x, x, x, cache=cache)
    measured = sum(t.numel() * t.element_size() for t in (cache.key, cache.value))
    assert kv_cache_bytes(5, num_layers=1, num_kv_heads=4, head_dim=4, batch=2) == measured
    assert kv_cache_bytes(5, num_layers=3, num_kv_heads=1, head_dim=4, dtype=torch.bfloat16) == 2 * 3 * 5 * 4 * 2


def test_sequential_operations_and_path_lengths() -> None:
    assert [sequential_operations(layer, 10) for layer in ("self_attention", "rnn", "conv")] == [1, 10, 1]
    assert maximum_path_length("self_attention", 100) == 1
    assert maximum_path_length("rnn", 100) == 99
    # contiguous kernels: receptive field 1 + ℓ(k−1) must reach n
    for n, k in [(9, 3), (10, 3), (2, 2), (100, 5)]:
        layers = maximum_path_length("conv", n, k=k)
        assert 1 + layers * (k - 1) >= n > 1 + (layers - 1) * (k - 1)
    # dilated: k^ℓ ≥ n, exact at powers
    assert maximum_path_length("conv", 9, k=3, dilated=True) == 2
    assert maximum_path_length("conv", 10, k=3, dilated=True) == 3
    assert maximum_path_length("conv", 1024, k=2, dilated=True) == math.ceil(math.log2(1024))


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: matmul_flops(0, 1, 1), ValueError),
        (lambda: self_attention_flops(2.0, 4), TypeError),
        (lambda: rnn_flops(3, 4, gates=0), ValueError),
        (lambda: sequential_operations("lstm", 3), ValueError),
        (lambda: maximum_path_length("conv", 5, k=1), ValueError),
        (lambda: attention_matrix_bytes(4, dtype="float32"), TypeError),
        (lambda: kv_cache_bytes(4, num_layers=1, num_kv_heads=0, head_dim=2), ValueError),
        (lambda: median_time(lambda: None, repeats=0), ValueError),
        (lambda: median_times([], repeats=3), ValueError),
        (lambda: median_times(lambda: None), TypeError),
        (lambda: median_times([lambda: None, 3]), TypeError),
        (lambda: median_times(f for f in [lambda: None]), TypeError),
        (lambda: median_times([lambda: None], clock="gpu"), ValueError),
        (lambda: loglog_slope([1.0], [2.0]), ValueError),
        (lambda: loglog_slope([1.0, 2.0], [0.0, 1.0]), ValueError),
    ],
)
def test_bad_inputs_raise(call, error: type) -> None:
    with pytest.raises(error):
        call()


def test_loglog_slope_recovers_exponents() -> None:
    x = [2.0, 4.0, 8.0, 16.0]
    assert loglog_slope(x, [3.0 * v**2 for v in x]) == pytest.approx(2.0, abs=1e-12)
    assert loglog_slope(x, [5.0 / v for v in x]) == pytest.approx(-1.0, abs=1e-12)


def test_median_time_counts_calls_and_is_the_median() -> None:
    calls = []
    seconds = median_time(lambda: calls.append(1), repeats=5, warmup=2)
    assert len(calls) == 7
    assert 0.0 <= seconds < 0.1
    assert matmul_gflops(64, repeats=3) > 0


def test_median_times_interleaves_rounds_and_takes_each_median(monkeypatch: pytest.MonkeyPatch) -> None:
    # A fake clock that only the functions advance. Each call costs what its list says next, plus a penalty
    # when it follows a call of another function (cold caches): the untimed call before each timed one must
    # keep that penalty out of every median.
    now, last, order = [0.0], [""], []

    def costing(name: str, costs: list[float]) -> Callable[[], None]:
        def fn() -> None:
            now[0] += costs.pop(0) + (100.0 if last[0] not in ("", name) else 0.0)
            last[0] = name
            order.append(name)

        return fn

    monkeypatch.setattr(time, "perf_counter", lambda: now[0])
    # Per round: an untimed call (cost 0) then the timed one; one warm-up round before.
    fast = costing("a", [0.0, 0.0, 1.0, 0.0, 5.0, 0.0, 2.0])
    slow = costing("b", [0.0, 0.0, 10.0, 0.0, 30.0, 0.0, 20.0])
    assert median_times([fast, slow], repeats=3, warmup=1) == [2.0, 20.0]
    assert order == ["a", "b"] + ["a", "a", "b", "b"] * 3  # round by round, not all of a then all of b
    # One function alone needs no untimed call between its timed ones; the CPU clock is read the same way.
    monkeypatch.setattr(time, "process_time", lambda: now[0])
    last[0] = ""
    assert median_times((costing("c", [4.0, 6.0, 5.0]),), repeats=3, warmup=0, clock="cpu") == [5.0]


def test_sweep_times_times_every_call_in_turn_and_keeps_the_sweeps_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    now, order = [0.0], []

    def costing(name: str, cost: float) -> Callable[[], None]:
        def fn() -> None:
            now[0] += cost
            order.append(name)

        return fn

    monkeypatch.setattr(time, "perf_counter", lambda: now[0])
    sweeps = {"rnn": [costing("r1", 1.0), costing("r2", 2.0)], "attention": (costing("a1", 3.0),)}
    assert sweep_times(sweeps, repeats=2, warmup=0) == {"rnn": [1.0, 2.0], "attention": [3.0]}
    assert order == ["r1", "r1", "r2", "r2", "a1", "a1"] * 2  # one round holds every call of every sweep


@pytest.mark.parametrize(
    ("sweeps", "error", "message"),
    [
        ([lambda: None], TypeError, "sweeps: expected a mapping"),
        ({"rnn": lambda: None}, TypeError, "sweeps['rnn']: expected a sequence of callables, got function"),
        ({"rnn": []}, ValueError, "sweeps['rnn']: expected at least one callable"),
        ({"rnn": [3]}, TypeError, "fns[0]: expected a callable"),
    ],
)
def test_sweep_times_refuses_bad_input(sweeps: object, error: type, message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        sweep_times(sweeps, repeats=1)  # type: ignore[arg-type]


def test_peak_tensor_bytes_sees_intermediates_and_frees() -> None:
    x = torch.randn(64, 64)  # exists before: not counted

    def two_temporaries() -> torch.Tensor:
        a = x * 2  # 16 KiB
        b = a + 1  # another 16 KiB, both alive
        del a
        return b.sum()  # a freed; a 4-byte result

    assert peak_tensor_bytes(two_temporaries) == 2 * 64 * 64 * 4
    assert peak_tensor_bytes(lambda: x.t()[:10]) == 0  # a view of an existing tensor allocates nothing
    assert peak_tensor_bytes(lambda: torch.empty(0)) == 0


def test_peak_tensor_bytes_attention_scores() -> None:
    q = torch.randn(1, 1, 32, 8)
    with torch.no_grad():
        peak = peak_tensor_bytes(lambda: scaled_dot_product_attention(q, q, q))
    scores = 32 * 32 * 4
    output = 32 * 8 * 4
    # the (L, S) score matrix is materialised, next to Q-sized temporaries and the output
    assert scores + output <= peak <= scores + 3 * output
