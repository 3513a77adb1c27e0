"""Tests for tformer.analysis.parallelism: ZeRO memory against the paper's formulas and worked example, ring
traffic, Megatron's all-reduce count against FLOPs, GPipe's bubble formula against the simulated schedule."""

from __future__ import annotations

import itertools

import pytest

from tformer.analysis.complexity import feed_forward_flops, self_attention_flops
from tformer.analysis.parallelism import (
    STRATEGIES,
    bubble_fraction,
    choose_strategy,
    communication_elements,
    layer_flops,
    simulate_pipeline,
    tensor_parallel_all_reduce_elements,
    training_memory_bytes,
)


@pytest.mark.parametrize("num_params", [1, 1000, 7_500_000_000])
@pytest.mark.parametrize("n", [1, 2, 64])
def test_memory_matches_the_papers_formulas(num_params: int, n: int) -> None:
    """Rajbhandari et al. 2020, Figure 1: (2 + 2 + K)Ψ, 2Ψ + 2Ψ + KΨ/N, 2Ψ + (2 + K)Ψ/N, (2 + 2 + K)Ψ/N."""
    psi, k = num_params, 12
    expected = {"ddp": (2 + 2 + k) * psi, "zero1": 2 * psi + 2 * psi + k * psi / n,
                "zero2": 2 * psi + (2 + k) * psi / n, "zero3": (2 + 2 + k) * psi / n}
    for strategy in STRATEGIES:
        assert training_memory_bytes(psi, strategy, n).total == pytest.approx(expected[strategy], rel=1e-12)
    assert training_memory_bytes(psi, "ddp", n).total == 16 * psi  # 16 bytes per parameter


def test_the_papers_worked_example() -> None:
    """Figure 1: Ψ = 7.5 B, N = 64, K = 12: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB."""
    totals = [training_memory_bytes(7_500_000_000, s, 64).total / 1e9 for s in STRATEGIES]
    assert [round(t, 1) for t in totals] == [120.0, 31.4, 16.6, 1.9]


def test_memory_parts_and_float32_adam() -> None:
    parts = training_memory_bytes(1000, "zero2", 4, param_bytes=4, grad_bytes=4, optimizer_bytes=8)
    assert (parts.parameters, parts.gradients, parts.optimizer) == (4000, 1000, 2000)
    assert training_memory_bytes(1000, "zero3", 1).total == training_memory_bytes(1000, "ddp", 1).total


@pytest.mark.parametrize(("args", "error"), [((0, "ddp", 2), ValueError), ((10, "zero4", 2), ValueError),
                                             ((10, "ddp", 0), ValueError), ((10.0, "ddp", 2), TypeError)])
def test_memory_rejects_bad_arguments(args: tuple, error: type) -> None:
    with pytest.raises(error):
        training_memory_bytes(*args)


def test_communication_volume() -> None:
    """DDP, ZeRO-1, ZeRO-2: 2(N−1)/N·Ψ per device; ZeRO-3 1.5× that (§7.2); nothing on one device."""
    assert communication_elements(1000, "ddp", 4) == 1500
    assert communication_elements(1000, "zero2", 4) == communication_elements(1000, "ddp", 4)
    assert communication_elements(1000, "zero3", 4) == 1.5 * communication_elements(1000, "ddp", 4)
    assert communication_elements(1000, "zero3", 1) == 0


def test_tensor_parallel_traffic_and_flops() -> None:
    assert tensor_parallel_all_reduce_elements(2, 10, 64) == 2 * 2 * 10 * 64
    assert tensor_parallel_all_reduce_elements(2, 10, 64, backward=True) == 4 * 2 * 10 * 64
    assert layer_flops(3, 10, 64, 256) == 3 * (self_attention_flops(10, 64, projections=True)
                                                + feed_forward_flops(10, 64, 256))
    assert layer_flops(1, 10, 64, 256) == 4 * 10 * 10 * 64 + 8 * 10 * 64 * 64 + 4 * 10 * 64 * 256


@pytest.mark.parametrize("p", [1, 2, 4, 8])
@pytest.mark.parametrize("m", [1, 3, 8, 32])
@pytest.mark.parametrize("times", [(1.0, 2.0), (1.0, 1.0)])
def test_simulated_bubble_equals_the_formula(p: int, m: int, times: tuple[float, float]) -> None:
    run = simulate_pipeline(p, m, forward_time=times[0], backward_time=times[1])
    assert run.bubble_fraction == pytest.approx(bubble_fraction(p, m), abs=1e-12)
    assert run.makespan == pytest.approx((m + p - 1) * sum(times))
    assert len(run.tasks) == 2 * p * m
    for stage in range(p):  # a stage never runs two tasks at once
        spans = sorted((t.start, t.end) for t in run.tasks if t.stage == stage)
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))


def test_simulation_respects_dependencies() -> None:
    run = simulate_pipeline(3, 4)
    end = {(t.phase, t.stage, t.microbatch): t.end for t in run.tasks}
    for t in run.tasks:
        if t.phase == "F" and t.stage > 0:
            assert t.start >= end[("F", t.stage - 1, t.microbatch)]
        if t.phase == "B":
            before = ("B", t.stage + 1, t.microbatch) if t.stage < 2 else ("F", t.stage, t.microbatch)
            assert t.start >= end[before]


def test_bubble_formula_values_and_errors() -> None:
    assert bubble_fraction(4, 1) == 0.75
    assert bubble_fraction(1, 5) == 0.0
    assert bubble_fraction(4, 13) == 0.1875
    with pytest.raises(ValueError):
        bubble_fraction(0, 4)
    with pytest.raises(ValueError):
        simulate_pipeline(2, 2, forward_time=0.0)


def test_choose_strategy() -> None:
    gb = 1e9
    assert choose_strategy(1_000_000, 8, 80 * gb) == "ddp"
    assert choose_strategy(7_000_000_000, 8, 80 * gb) == "zero1"  # 112 GB under DDP; 28 + 84/8 = 38.5 GB
    assert choose_strategy(7_000_000_000, 8, 30 * gb) == "zero2"  # 14 + 98/8 = 26.25 GB
    assert choose_strategy(7_000_000_000, 8, 20 * gb) == "zero3"  # 112/8 = 14 GB
    assert choose_strategy(70_000_000_000, 8, 80 * gb) == "none fits"  # 140 GB even under ZeRO-3
    with pytest.raises(ValueError):
        choose_strategy(10, 2, 0)
