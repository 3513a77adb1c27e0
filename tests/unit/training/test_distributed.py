"""Tests for tformer.training.distributed: the launcher (results, errors, time-outs, clean-up, concurrent
launches), DDP against one-process training, FSDP's shards, and the tensor-parallel layers against the whole ones.

Every test that launches starts real processes (spawn, gloo, 2 ranks), a few seconds each.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
import torch.distributed as dist

from tformer.analysis.parallelism import training_memory_bytes
from tformer.attention import MultiHeadAttention
from tformer.layers import FeedForward
from tformer.training.distributed import (
    build_translator,
    ddp_timing_worker,
    ddp_worker,
    distributed_support,
    fsdp_worker,
    launch,
    shard_attention,
    shard_feed_forward,
    shard_rows,
    tensor_parallel_worker,
    train_steps,
)

pytestmark = pytest.mark.skipif(distributed_support() is not None, reason=str(distributed_support()))

VOCAB = (23, 19)


# Workers for the launcher tests: module level, so spawned processes can import them.
def _rank_and_sum(rank: int, world_size: int, offset: int) -> tuple[int, int, float]:
    value = torch.tensor([float(rank + offset)])
    dist.all_reduce(value)
    return rank, world_size, value.item()


def _fail_on_rank_one(rank: int, world_size: int) -> None:
    if rank == 1:
        raise ValueError("boom from rank 1")
    dist.barrier()  # rank 0 would wait here for its partner until gloo's time-out


def _fail_on_rank_one_in_a_collective(rank: int, world_size: int) -> None:
    if rank == 1:
        time.sleep(0.5)  # let rank 0 enter the all-reduce first
        raise ValueError("boom from rank 1")
    dist.all_reduce(torch.ones(1))  # broken by rank 1 leaving the group: "Connection closed by peer"


def _sleep(rank: int, world_size: int, seconds: float) -> None:
    time.sleep(seconds)


def _random_batch(seed: int, rows: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids with uneven padding, so the two halves hold different numbers of target tokens."""
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(4, VOCAB[0], (rows, 7), generator=generator)
    tgt = torch.randint(4, VOCAB[1], (rows, 5), generator=generator)
    src[0, 5:] = 0
    tgt[0, 2:] = 0
    tgt[-1, 4:] = 0
    return src, tgt


def test_two_launches_at_once_return_their_own_values() -> None:
    # Each launch meets through its own rendezvous file: no shared port to clash on.
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(launch, _rank_and_sum, (offset,)) for offset in (0, 100)]
        assert [f.result() for f in futures] == [[(0, 2, 1.0), (1, 2, 1.0)], [(0, 2, 201.0), (1, 2, 201.0)]]


def test_a_child_error_reaches_the_parent_and_no_process_survives() -> None:
    start = time.monotonic()
    with pytest.raises(torch.multiprocessing.ProcessRaisedException, match="boom from rank 1"):
        launch(_fail_on_rank_one, timeout_s=300)
    assert time.monotonic() - start < 150  # rank 0 was terminated, not left waiting for the time-out
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("attempt", range(3))
def test_the_raising_rank_is_reported_not_its_partner(attempt: int) -> None:
    # Rank 0's all-reduce fails as a consequence of rank 1 leaving; launch must report rank 1's own exception.
    with pytest.raises(torch.multiprocessing.ProcessRaisedException, match="boom from rank 1") as caught:
        launch(_fail_on_rank_one_in_a_collective, timeout_s=300)
    assert caught.value.error_index == 1
    assert multiprocessing.active_children() == []


def test_time_out_terminates_the_processes() -> None:
    with pytest.raises(TimeoutError, match="_sleep"):
        launch(_sleep, (60,), timeout_s=3)
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize(("kwargs", "error"), [({"world_size": 0}, ValueError), ({"world_size": 2.0}, TypeError),
                                               ({"timeout_s": 0}, ValueError), ({"timeout_s": -1.5}, ValueError),
                                               ({"timeout_s": "5"}, TypeError), ({"timeout_s": True}, TypeError),
                                               ({"threads": 0}, ValueError)])
def test_launch_rejects_bad_settings(kwargs: dict, error: type) -> None:
    name = next(iter(kwargs))
    with pytest.raises(error, match=f"^{name}: expected"):
        launch(_rank_and_sum, (0,), **kwargs)


def test_the_probe_launches_two_processes() -> None:
    assert distributed_support(probe=True) is None
    with pytest.raises(TypeError, match="probe"):
        distributed_support(probe=1)
    with pytest.raises(ValueError, match="timeout_s"):
        distributed_support(probe=True, timeout_s=0)


def test_timing_worker_with_and_without_ddp() -> None:
    batch = _random_batch(0)
    for ddp in (True, False):
        ranks = launch(ddp_timing_worker, (VOCAB, [batch], 1, ddp))
        for rank in ranks:
            assert len(rank["step_s"]) == 1 and rank["step_s"][0] > 0
            assert (rank["allreduce_s"] > 0) == ddp  # the control sends nothing


def test_shard_rows_splits_contiguously_and_checks() -> None:
    src, tgt = _random_batch(0)
    halves = [shard_rows((src, tgt), rank, 2) for rank in range(2)]
    torch.testing.assert_close(torch.cat([h[0] for h in halves]), src, rtol=0, atol=0)
    torch.testing.assert_close(torch.cat([h[1] for h in halves]), tgt, rtol=0, atol=0)
    with pytest.raises(ValueError, match="divisible"):
        shard_rows((src, tgt), 0, 4)
    with pytest.raises(ValueError, match="rank"):
        shard_rows((src, tgt), 2, 2)


def test_ddp_equals_one_process_training() -> None:
    batches = [_random_batch(seed) for seed in range(3)]
    ranks = launch(ddp_worker, (VOCAB, batches))
    reference = build_translator(*VOCAB)
    reference_gradients = train_steps(reference, batches)
    for step, expected in enumerate(reference_gradients):
        for rank in ranks:
            torch.testing.assert_close(rank["gradients"][step], expected, rtol=0, atol=1e-6)
    # The per-rank mean loss weighs the halves' tokens unequally (their counts differ): a different gradient.
    naive = max((ranks[0]["naive_gradient"][n] - g).abs().max().item() for n, g in reference_gradients[0].items())
    assert naive > 1e-4
    # Both ranks hold bit-identical weights; the one-process run agrees except where Adam amplifies rounding noise
    # (the key biases, whose exact gradient is zero), so compare those loosely.
    for name, value in ranks[0]["state"].items():
        assert torch.equal(value, ranks[1]["state"][name]), name
        tolerance = 1e-3 if name.endswith("w_k.bias") else 1e-6
        torch.testing.assert_close(value, reference.state_dict()[name], rtol=0, atol=tolerance)


def test_fsdp_holds_the_zero3_share() -> None:
    ranks = launch(fsdp_worker, (VOCAB, _random_batch(0)))
    num_params = sum(p.numel() for p in build_translator(*VOCAB).parameters())
    assert ranks[0]["full_parameters"] == 4 * num_params
    # Each parameter is split on its first dimension; shards of odd sizes differ by a row, so compare the sum.
    for part, per_param in (("parameters", 4), ("gradients", 4), ("optimizer", 8)):
        assert sum(rank[part] for rank in ranks) == per_param * num_params
    formula = training_memory_bytes(num_params, "zero3", 2, param_bytes=4, grad_bytes=4, optimizer_bytes=8)
    assert ranks[0]["parameters"] == pytest.approx(formula.parameters, rel=0.02)
    assert ranks[0]["optimizer"] == pytest.approx(formula.optimizer, rel=0.02)
    # While a layer runs, a rank holds its shards plus the other half of that layer and of the root's weights:
    # the largest layer is a decoder layer (self- and cross-attention and the FFN).
    model = build_translator(*VOCAB)
    decoder_layer = 4 * sum(p.numel() for p in model.decoder.layers[0].parameters())
    root = 4 * sum(p.numel() for name, p in model.named_parameters() if ".layers." not in name)
    for rank in ranks:
        assert rank["peak_parameters"] == pytest.approx(4 * num_params / 2 + (decoder_layer + root) / 2, rel=0.01)


def test_tensor_parallel_layers_equal_the_whole_layers() -> None:
    torch.manual_seed(0)
    attention, ffn = MultiHeadAttention(16, 4).double().eval(), FeedForward(16, 24).double().eval()
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    ranks = launch(tensor_parallel_worker, (attention, ffn, x))
    with torch.no_grad():
        expected_attention, expected_ffn = attention(x, x, x)[0], ffn(x)
    for rank in ranks:
        torch.testing.assert_close(rank["attention"], expected_attention, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(rank["ffn"], expected_ffn, rtol=1e-12, atol=1e-12)
        assert rank["all_reduce"] == [2 * 5 * 16, 2 * 5 * 16]  # two all-reduces of B·L·D numbers
        # torch.distributed.tensor.parallel (ColwiseParallel W_1, RowwiseParallel W_2) gives the same layer.
        torch.testing.assert_close(rank["ffn_torch"], rank["ffn"], rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(rank["ffn_torch"], expected_ffn, rtol=1e-12, atol=1e-12)


def test_tensor_parallel_layers_without_biases() -> None:
    torch.manual_seed(1)
    attention = MultiHeadAttention(8, 2, bias=False).double().eval()
    ffn = FeedForward(8, 16, bias=False).double().eval()
    shard = shard_attention(attention, 0, 2)
    assert not any(key.startswith("b_") for key in shard)
    assert not any(key.startswith("b_") for key in shard_feed_forward(ffn, 1, 2))
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    ranks = launch(tensor_parallel_worker, (attention, ffn, x))
    with torch.no_grad():
        expected_attention, expected_ffn = attention(x, x, x)[0], ffn(x)
    for rank in ranks:
        torch.testing.assert_close(rank["attention"], expected_attention, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(rank["ffn"], expected_ffn, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(rank["ffn_torch"], expected_ffn, rtol=1e-12, atol=1e-12)


def test_shard_attention_refuses_rope() -> None:
    from tformer.positional import RotaryEmbedding

    attention = MultiHeadAttention(8, 2, rope=RotaryEmbedding(4))
    with pytest.raises(ValueError, match="rope"):
        shard_attention(attention, 0, 2)


def test_train_steps_refuses_an_all_padding_batch() -> None:
    src, tgt = _random_batch(0)
    with pytest.raises(ValueError, match=r"batches\[1\]: expected at least one non-pad target token"):
        train_steps(build_translator(*VOCAB), [(src, tgt), (src, torch.zeros_like(tgt))])


def test_shards_partition_the_weights() -> None:
    attention, ffn = MultiHeadAttention(16, 4), FeedForward(16, 24)
    shards = [shard_attention(attention, rank, 2) for rank in range(2)]
    torch.testing.assert_close(torch.cat([s["w_q"] for s in shards]), attention.w_q.weight.detach())
    torch.testing.assert_close(torch.cat([s["w_o"] for s in shards], dim=1), attention.w_o.weight.detach())
    ffn_shards = [shard_feed_forward(ffn, rank, 2) for rank in range(2)]
    torch.testing.assert_close(torch.cat([s["w_1"] for s in ffn_shards]), ffn.w_1.weight.detach())
    torch.testing.assert_close(torch.cat([s["w_2"] for s in ffn_shards], dim=1), ffn.w_2.weight.detach())
    with pytest.raises(ValueError, match="num_heads"):
        shard_attention(attention, 0, 3)
    with pytest.raises(ValueError, match="d_ff"):
        shard_feed_forward(ffn, 0, 5)
