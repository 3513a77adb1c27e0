"""Training one model with several processes: a launcher and the workers of chapter ``15_parallelism``.

Everything here runs on a CPU with PyTorch's ``gloo`` backend, so a laptop (or a Colab runtime) can show what
``torch.distributed`` does. The workers are module-level functions because :func:`launch` starts *spawned*
processes, which import them by name: a function defined in a notebook cannot be sent to them.

- :func:`launch` starts ``world_size`` processes, joins them through a file (no network port, so two notebooks or
  test runs at once never clash), returns each rank's return value, and cleans up: the process group is destroyed
  in every child that reaches its ``finally``, and children still alive when the parent stops (an error, a
  time-out, an interrupt) are terminated, then killed if they ignore that. An exception in a child is raised in
  the parent with the traceback of the rank that raised *first* (not a partner's consequent connection error).
- Data parallel: :func:`ddp_worker` trains :func:`build_translator` under
  ``torch.nn.parallel.DistributedDataParallel`` (Li et al. 2020), each rank on its share of every batch
  (:func:`shard_rows`); :func:`train_steps` is the same loop in one process, the reference it must equal.
  :func:`ddp_timing_worker` times one step and one all-reduce of the gradients.
- Sharded data parallel: :func:`fsdp_worker` wraps the model with ``torch.distributed.fsdp.fully_shard`` (FSDP2)
  and weighs what each rank holds.
- Tensor parallel (Shoeybi et al. 2019, Megatron-LM, §3): :func:`shard_attention` / :func:`shard_feed_forward`
  cut one layer's weights by heads / hidden units; :func:`tensor_parallel_attention` and
  :func:`tensor_parallel_feed_forward` run a shard and sum the partial outputs with one ``all_reduce`` each.

Dimension letters as in :mod:`tformer`: B batch, S source length, L target length, D ``d_model``, H heads,
Dh head width, F FFN width, V vocabulary; N is the number of processes (``world_size``).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import Tensor, nn
from torch.nn import functional as F

from tformer._checks import check_bool, check_int, check_number
from tformer.attention import MultiHeadAttention, merge_heads, split_heads
from tformer.data.text import BOS_ID, PAD_ID
from tformer.functional import scaled_dot_product_attention
from tformer.layers import FeedForward
from tformer.models import Transformer
from tformer.training.teacher_forcing import shift_right

__all__ = [
    "build_translator",
    "ddp_timing_worker",
    "ddp_worker",
    "distributed_support",
    "fsdp_worker",
    "launch",
    "shard_attention",
    "shard_feed_forward",
    "shard_rows",
    "summed_token_loss",
    "tensor_parallel_attention",
    "tensor_parallel_feed_forward",
    "tensor_parallel_worker",
    "train_steps",
]

Batch = tuple[Tensor, Tensor]  # src (B, S), tgt (B, L): int64 ids, padded with PAD_ID, targets end in EOS


# ----------------------------------------------------------------------------------------------- the launcher
def distributed_support(*, probe: bool = False, timeout_s: float = 60.0) -> str | None:
    """``None`` when :func:`launch` can run here, else the reason it cannot (a sentence to print).

    Without ``probe`` only the build is checked (``torch.distributed`` and gloo compiled in). With ``probe``,
    two processes are also launched and all-reduce one number, which catches what fails only at run time:
    spawning, or gloo not finding a network interface (on some hosts; setting the environment variable
    ``GLOO_SOCKET_IFNAME=lo`` before launching usually fixes it).

    Raises:
        TypeError/ValueError: if ``probe`` is not a bool or ``timeout_s`` not a positive number.
    """
    check_bool("probe", probe)
    check_number("timeout_s", timeout_s, 0, open_min=True)
    if not dist.is_available():
        return "this PyTorch build has no torch.distributed"
    if not dist.is_gloo_available():
        return "this PyTorch build has no gloo backend"
    if dist.is_initialized():
        return "a process group is already initialised in this process"
    if probe:
        try:
            sums = launch(_probe_worker, world_size=2, timeout_s=timeout_s)
        except Exception as error:  # any failure means the chapter cannot launch here: say which
            last = (str(error).strip().splitlines() or [""])[-1]
            return (f"a 2-process all-reduce failed ({type(error).__name__}: {last}); if gloo cannot find a "
                    f"network interface, set GLOO_SOCKET_IFNAME=lo")
        if sums != [1.0, 1.0]:
            return f"a 2-process all-reduce of 0 and 1 returned {sums}, expected [1.0, 1.0]"
    return None


def _probe_worker(rank: int, world_size: int) -> float:
    value = torch.tensor([float(rank)])
    dist.all_reduce(value)
    return value.item()


def _run_rank(rank: int, worker: Callable[..., Any], world_size: int, init_file: str, out_dir: str,
              args: tuple, timeout_s: float, threads: int) -> None:
    """Entry point of one spawned process: join the group, run ``worker``, save its result, leave the group.

    If ``worker`` raises, its traceback is written to ``out_dir/rank{rank}.err`` (with the wall-clock time) before
    the group is destroyed: destroying it breaks the partners' pending collectives, and :func:`launch` must be
    able to tell the original error from those consequences.
    """
    torch.set_num_threads(threads)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=timeout_s))
    try:
        result = worker(rank, world_size, *args)
        torch.save(result, Path(out_dir) / f"rank{rank}.pt")
    except BaseException:
        raised_at = time.time()
        partial = Path(out_dir) / f"rank{rank}.err.partial"
        partial.write_text(f"{raised_at!r}\n{traceback.format_exc()}")
        partial.replace(Path(out_dir) / f"rank{rank}.err")  # atomic: the parent never reads half a file
        raise
    finally:
        dist.destroy_process_group()


def _first_error(folder: str, world_size: int) -> tuple[int, str] | None:
    """The rank whose worker raised first and its traceback, from the ``rank{r}.err`` files; ``None`` if none."""
    errors = []
    for rank in range(world_size):
        path = Path(folder) / f"rank{rank}.err"
        if path.exists():
            raised_at, _, text = path.read_text().partition("\n")
            errors.append((float(raised_at), rank, text))
    if not errors:
        return None
    _, rank, text = min(errors)
    return rank, text


def launch(
    worker: Callable[..., Any],
    args: Sequence[Any] = (),
    *,
    world_size: int = 2,
    timeout_s: float = 120.0,
    threads: int = 1,
) -> list[Any]:
    """Run ``worker(rank, world_size, *args)`` in ``world_size`` new processes joined in one gloo group.

    The processes are started with ``torch.multiprocessing``'s ``spawn`` method (fresh interpreters, so it works
    the same from a script, a notebook, on Linux, macOS or Colab) and meet through a rendezvous *file* in a
    private temporary folder (``init_method="file://..."``), so no TCP port is chosen and concurrent launches
    cannot collide. ``worker`` must be importable (a module-level function) and ``args`` picklable.

    Args:
        worker: called in every process as ``worker(rank, world_size, *args)``; its return value (picklable by
            ``torch.save``) is collected.
        args: extra positional arguments, the same for every rank.
        world_size: number of processes N (≥ 1).
        timeout_s: wall-clock seconds for the whole run; also gloo's time-out for one collective, so a rank
            left waiting for a dead partner fails instead of hanging.
        threads: torch threads per process (1: N processes on N cores do not oversubscribe them).

    Returns:
        The workers' return values, indexed by rank.

    Raises:
        TypeError/ValueError: if ``world_size`` or ``threads`` is not a positive int, or ``timeout_s`` not a
            positive number.
        torch.multiprocessing.ProcessRaisedException: when a worker raised; the message holds the traceback of
            the rank that raised first and ``error_index`` is that rank.
        torch.multiprocessing.ProcessExitedException: when a worker died without a Python exception.
        TimeoutError: when the processes are still running after ``timeout_s`` (they are terminated).
    """
    world_size = check_int("world_size", world_size, 1)
    threads = check_int("threads", threads, 1)
    timeout_s = check_number("timeout_s", timeout_s, 0, open_min=True)
    with tempfile.TemporaryDirectory(prefix="tformer-dist-") as folder:
        init_file = os.path.join(folder, "rendezvous")  # must not exist yet: gloo's FileStore creates it
        context = mp.start_processes(
            _run_rank, args=(worker, world_size, init_file, folder, tuple(args), timeout_s, threads),
            nprocs=world_size, join=False, start_method="spawn",
        )
        deadline = time.monotonic() + timeout_s
        try:
            # join() returns True once every process exited cleanly and raises as soon as one failed
            # (after terminating the others).
            while not context.join(timeout=0.2):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"launch: {worker.__name__} still running after {timeout_s} s; terminated")
        except mp.ProcessRaisedException as error:
            # join() reports whichever failure it saw first, often a partner's "Connection closed by peer"
            # caused by the raising rank leaving the group; report the exception that was raised first.
            first = _first_error(folder, world_size)
            if first is None or first[0] == error.error_index:
                raise
            rank, text = first
            raise mp.ProcessRaisedException(
                f"\n\n-- Process {rank} raised first (process {error.error_index} failed after it) --\n{text}",
                rank, context.processes[rank].pid) from error
        finally:
            for process in context.processes:
                if process.is_alive():
                    process.terminate()
                process.join(timeout=10)
                if process.is_alive():  # ignored SIGTERM (stuck in native code): SIGKILL
                    process.kill()
                    process.join(timeout=10)
        return [torch.load(Path(folder) / f"rank{rank}.pt", weights_only=False) for rank in range(world_size)]


# ----------------------------------------------------------------------------------------------- data parallel
def build_translator(src_vocab_size: int, tgt_vocab_size: int, *, seed: int = 0) -> Transformer:
    """The chapter's small running-example translator (D = 32, H = 4, 2 + 2 layers, F = 64, no dropout).

    The one place the chapter builds its model, so every process builds the same one. Dropout is 0 so that a
    forward pass depends only on the weights and the batch, not on each process's random stream.
    """
    torch.manual_seed(seed)
    return Transformer(src_vocab_size, tgt_vocab_size, d_model=32, num_heads=4, num_encoder_layers=2,
                       num_decoder_layers=2, d_ff=64, dropout=0.0, max_len=64, norm_first=True)


def shard_rows(batch: Batch, rank: int, world_size: int) -> Batch:
    """Rank ``rank``'s contiguous share of a batch's rows: ``(B, ·) -> (B / N, ·)`` for src and tgt.

    Raises:
        ValueError: if B is not divisible by ``world_size``, or ``rank`` is outside ``[0, world_size)``.
    """
    src, tgt = batch
    B = src.shape[0]
    world_size = check_int("world_size", world_size, 1)
    if B % world_size != 0:
        raise ValueError(f"batch: expected B divisible by world_size={world_size}, got B={B}")
    if not 0 <= check_int("rank", rank) < world_size:
        raise ValueError(f"rank: expected 0 <= rank < {world_size}, got {rank}")
    share = B // world_size
    return src[rank * share : (rank + 1) * share], tgt[rank * share : (rank + 1) * share]


def summed_token_loss(model: nn.Module, batch: Batch, scale: float) -> Tensor:
    """Teacher-forced cross-entropy summed over the batch's non-pad target tokens, times ``scale``.

    With ``scale = N / T`` (T the non-pad target tokens of the *whole* batch, N the ranks), DDP's average of
    the N ranks' gradients is exactly the gradient of the whole batch's mean token loss, however unevenly the
    tokens fall between the shares; a per-rank *mean* would weight a short share's tokens more.

    Shape:
        batch: ``src (B, S)``, ``tgt (B, L)`` → a scalar.
    """
    src, tgt = batch
    logits = model(src, shift_right(tgt, BOS_ID))  # (B, L, V)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=PAD_ID,
                           reduction="sum")
    return loss * scale


def _tokens(batch: Batch) -> int:
    return int((batch[1] != PAD_ID).sum())


def train_steps(model: nn.Module, batches: Sequence[Batch], *, lr: float = 1e-3, rank: int = 0,
                world_size: int = 1) -> list[dict[str, Tensor]]:
    """Adam steps on ``batches``, one per batch, each rank on its :func:`shard_rows` share; the reference loop.

    With ``world_size = 1`` this is ordinary one-process training on whole batches; :func:`ddp_worker` runs the
    same loop with ``model`` wrapped in DDP.

    Every rank is given the *whole* batch here, so each can count its token total T itself. In a real job a rank
    loads only its share; T is then the ``all_reduce`` (sum) of the ranks' local token counts, one extra
    collective of a single number per step.

    Returns:
        After each step's backward pass, the gradients ``{name: tensor}`` (float32, detached copies).

    Raises:
        ValueError: if a batch has no non-pad target token (its mean loss is undefined).
    """
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    gradients = []
    for index, batch in enumerate(batches):
        tokens = _tokens(batch)
        if tokens == 0:
            raise ValueError(f"batches[{index}]: expected at least one non-pad target token, got only {PAD_ID}s")
        scale = world_size / tokens
        optimizer.zero_grad(set_to_none=True)
        summed_token_loss(model, shard_rows(batch, rank, world_size), scale).backward()
        module = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
        gradients.append({name: p.grad.detach().clone() for name, p in module.named_parameters()})
        optimizer.step()
    return gradients


def ddp_worker(rank: int, world_size: int, vocab_sizes: tuple[int, int], batches: Sequence[Batch],
               lr: float = 1e-3) -> dict[str, Any]:
    """Train :func:`build_translator` under DDP on ``batches`` (each rank its share); run inside :func:`launch`.

    Returns:
        ``{"gradients": per step {name: averaged gradient}, "state": final state_dict,
        "naive_gradient": step-1 gradients had each rank used its own *mean* token loss}``.
    """
    model = nn.parallel.DistributedDataParallel(build_translator(*vocab_sizes))
    # The tempting per-rank mean: each share's own token count in the denominator, then DDP's average.
    share = shard_rows(batches[0], rank, world_size)
    summed_token_loss(model, share, 1.0 / _tokens(share)).backward()
    naive = {name: p.grad.detach().clone() for name, p in model.module.named_parameters()}
    model.zero_grad(set_to_none=True)
    gradients = train_steps(model, batches, lr=lr, rank=rank, world_size=world_size)
    return {"gradients": gradients, "state": model.module.state_dict(), "naive_gradient": naive}


def ddp_timing_worker(rank: int, world_size: int, vocab_sizes: tuple[int, int], batches: Sequence[Batch],
                      repeats: int = 7, ddp: bool = True) -> dict[str, Any]:
    """Median wall-clock seconds of one training step (forward, backward with DDP's all-reduce, Adam) on this
    rank's share of each batch in ``batches``, and of one ``all_reduce`` of a float32 buffer as large as all
    the gradients; run inside :func:`launch`.

    With ``world_size = 1`` the steps run on whole batches, without DDP. With ``ddp=False`` and N > 1, each rank
    trains its own unwrapped copy on its share (no gradient traffic, no DDP hooks): the control that shows
    what running N processes side by side costs by itself. One warm-up step per batch is not timed. Returns
    ``{"step_s": [one median per batch], "allreduce_s": ..., "gradient_numbers": ...}``; ``allreduce_s`` is 0
    for N = 1 or ``ddp=False``.
    """
    check_bool("ddp", ddp)
    model = build_translator(*vocab_sizes)
    ddp = ddp and world_size > 1
    if ddp:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    medians = []
    for batch in batches:
        share, scale = shard_rows(batch, rank, world_size), world_size / _tokens(batch)
        step_times = []
        for _ in range(repeats + 1):
            if world_size > 1:
                dist.barrier()  # start together, so one rank's time does not include waiting for the other
            start = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            summed_token_loss(model, share, scale).backward()
            optimizer.step()
            step_times.append(time.perf_counter() - start)
        medians.append(statistics.median(step_times[1:]))
    numbers = sum(p.numel() for p in model.parameters())
    reduce_times = []
    if ddp:
        buffer = torch.ones(numbers)
        for _ in range(repeats + 1):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(buffer)
            reduce_times.append(time.perf_counter() - start)
    return {"step_s": medians, "allreduce_s": statistics.median(reduce_times[1:]) if reduce_times else 0.0,
            "gradient_numbers": float(numbers)}


# ----------------------------------------------------------------------------------------------- sharded (FSDP)
def fsdp_worker(rank: int, world_size: int, vocab_sizes: tuple[int, int], batch: Batch) -> dict[str, float]:
    """Shard :func:`build_translator` with FSDP2 (``torch.distributed.fsdp.fully_shard``), take one Adam step on
    this rank's share of ``batch``, and weigh what this rank holds; run inside :func:`launch`.

    Every parameter is split along its first dimension across the N ranks (a ``DTensor``); its gradient and
    Adam's two moments are split the same way. Returns bytes held locally for ``"parameters"``,
    ``"gradients"`` and ``"optimizer"`` (float32), plus ``"full_parameters"``, the bytes of the whole model, and
    ``"peak_parameters"``: the most parameter bytes this rank held while one layer ran in the forward pass (its
    shards plus the full weights gathered for that layer and the root's), read by a forward pre-hook on each
    layer's first sublayer, which runs after FSDP's all-gather.
    """
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    # FSDP2 warns that the model returns a view (the logits of a Linear on (B, L, D) input); we never modify
    # them in place, which is what the warning is about, and it would only clutter the notebook.
    warnings.filterwarnings("ignore", message="FSDP2-wrapped module .* returned a view tensor")
    model = build_translator(*vocab_sizes)
    full = sum(p.numel() * p.element_size() for p in model.parameters())
    mesh = init_device_mesh("cpu", (world_size,))
    for layer in (*model.encoder.layers, *model.decoder.layers):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def held_bytes() -> float:  # a sharded parameter is a DTensor (count its local piece), a gathered one is not
        tensors = [p.to_local() if hasattr(p, "to_local") else p for p in model.parameters()]
        return float(sum(t.numel() * t.element_size() for t in tensors))

    peak = [0.0]

    def record_peak(module: nn.Module, inputs: Any) -> None:
        peak[0] = max(peak[0], held_bytes())

    for layer in (*model.encoder.layers, *model.decoder.layers):
        next(layer.children()).register_forward_pre_hook(record_peak)
    summed_token_loss(model, shard_rows(batch, rank, world_size), world_size / _tokens(batch)).backward()
    optimizer.step()

    def local_bytes(tensors: Sequence[Tensor]) -> float:
        locals_ = [t.to_local() if hasattr(t, "to_local") else t for t in tensors]
        return float(sum(t.numel() * t.element_size() for t in locals_))

    params = list(model.parameters())
    moments = [t for p in params for key, t in optimizer.state[p].items() if key in ("exp_avg", "exp_avg_sq")]
    return {"parameters": local_bytes(params), "gradients": local_bytes([p.grad for p in params]),
            "optimizer": local_bytes(moments), "full_parameters": float(full), "peak_parameters": peak[0]}


# ----------------------------------------------------------------------------------------------- tensor parallel
def _slice(num: int, rank: int, world_size: int, what: str) -> slice:
    if num % world_size != 0:
        raise ValueError(f"{what}: expected a multiple of world_size={world_size}, got {num}")
    if not 0 <= check_int("rank", rank) < world_size:
        raise ValueError(f"rank: expected 0 <= rank < {world_size}, got {rank}")
    share = num // world_size
    return slice(rank * share, (rank + 1) * share)


def shard_attention(attention: MultiHeadAttention, rank: int, world_size: int) -> dict[str, Tensor]:
    """Rank ``rank``'s share of a multi-head attention layer: H / N whole heads (Shoeybi et al. 2019, §3).

    W_Q, W_K, W_V are split by output rows ("column parallel": the heads' Dh-wide blocks), W_O by input
    columns ("row parallel"), so each rank computes its heads from the full input and a partial output that the
    ranks sum. The output bias is kept whole, to add once after the sum. PyTorch's ``nn.Linear`` stores
    W = Aᵀ for y = x·A, so the paper's column split of A is a split of ``weight``'s rows here.

    Shape:
        ``w_q, w_k, w_v: (D / N, D)``, ``b_q, b_k, b_v: (D / N,)``, ``w_o: (D, D / N)``, ``b_o: (D,)``; the
        bias entries are absent when the layer was built with ``bias=False``.

    Raises:
        ValueError: if H is not divisible by ``world_size``, ``rank`` is out of range, or the layer applies RoPE
            (not implemented by :func:`tensor_parallel_attention`; it would silently be dropped).
    """
    if attention.rope is not None:
        raise ValueError("attention: expected a layer without rope (RoPE is not implemented in the tensor-parallel "
                         "version), got one with a RotaryEmbedding")
    heads = _slice(attention.num_heads, rank, world_size, "num_heads")
    rows = slice(heads.start * attention.head_dim, heads.stop * attention.head_dim)  # Dh-wide blocks of heads
    shard = {"num_heads": torch.tensor(attention.num_heads // world_size)}
    for name in ("q", "k", "v"):
        linear = getattr(attention, f"w_{name}")
        shard[f"w_{name}"] = linear.weight[rows].detach().clone()  # (D / N, D)
        if linear.bias is not None:
            shard[f"b_{name}"] = linear.bias[rows].detach().clone()  # (D / N,)
    shard["w_o"] = attention.w_o.weight[:, rows].detach().clone()  # (D, D / N)
    if attention.w_o.bias is not None:
        shard["b_o"] = attention.w_o.bias.detach().clone()  # (D,)
    return shard


def tensor_parallel_attention(x: Tensor, shard: dict[str, Tensor], mask: Tensor | None = None) -> Tensor:
    """Self-attention over this rank's heads, then one ``all_reduce`` (sum) of the partial outputs.

    Must run in every rank of the default process group at once. The result equals the full layer's
    ``MultiHeadAttention(x, x, x, mask)[0]`` on every rank (up to float rounding).

    Shape:
        ``x (B, L, D)``, mask as :class:`~tformer.attention.MultiHeadAttention` -> ``(B, L, D)``.
    """
    heads = int(shard["num_heads"])
    q = split_heads(F.linear(x, shard["w_q"], shard.get("b_q")), heads)  # (B, H/N, L, Dh)
    k = split_heads(F.linear(x, shard["w_k"], shard.get("b_k")), heads)  # (B, H/N, L, Dh)
    v = split_heads(F.linear(x, shard["w_v"], shard.get("b_v")), heads)  # (B, H/N, L, Dh)
    context, _ = scaled_dot_product_attention(q, k, v, mask)  # (B, H/N, L, Dh)
    partial = F.linear(merge_heads(context), shard["w_o"])  # (B, L, D): this rank's heads' share of W_O
    dist.all_reduce(partial)  # sum over ranks = all heads
    return partial if "b_o" not in shard else partial + shard["b_o"]


def shard_feed_forward(ffn: FeedForward, rank: int, world_size: int) -> dict[str, Tensor]:
    """Rank ``rank``'s share of a feed-forward layer: F / N hidden units (Shoeybi et al. 2019, §3, Fig. 3a).

    W_1 is split by output rows (each rank computes its hidden units, and the activation acts on each unit
    alone, so no communication is needed before it), W_2 by input columns (partial outputs to sum).

    Shape:
        ``w_1: (F / N, D)``, ``b_1: (F / N,)``, ``w_2: (D, F / N)``, ``b_2: (D,)``; the biases are absent when
        the layer was built with ``bias=False``.

    Raises:
        ValueError: if F is not divisible by ``world_size`` or ``rank`` is out of range.
    """
    units = _slice(ffn.w_1.out_features, rank, world_size, "d_ff")
    shard = {"w_1": ffn.w_1.weight[units].detach().clone(), "w_2": ffn.w_2.weight[:, units].detach().clone()}
    if ffn.w_1.bias is not None:
        shard["b_1"] = ffn.w_1.bias[units].detach().clone()
    if ffn.w_2.bias is not None:
        shard["b_2"] = ffn.w_2.bias.detach().clone()
    return shard


def tensor_parallel_feed_forward(x: Tensor, shard: dict[str, Tensor], activation: str = "relu") -> Tensor:
    """The feed-forward layer over this rank's hidden units, then one ``all_reduce`` (sum).

    Shape:
        ``x (B, L, D) -> (B, L, D)``, equal on every rank to the full layer's output.
    """
    act = {"relu": F.relu, "gelu": F.gelu}[activation]
    hidden = act(F.linear(x, shard["w_1"], shard.get("b_1")))  # (B, L, F/N)
    partial = F.linear(hidden, shard["w_2"])  # (B, L, D)
    dist.all_reduce(partial)
    return partial if "b_2" not in shard else partial + shard["b_2"]


def tensor_parallel_worker(rank: int, world_size: int, attention: MultiHeadAttention, ffn: FeedForward,
                           x: Tensor) -> dict[str, Any]:
    """Run one attention layer and one FFN split across the ranks; run inside :func:`launch`.

    The same FFN split is then made by PyTorch's own tensor-parallel API: ``parallelize_module`` with
    ``ColwiseParallel`` for W_1 and ``RowwiseParallel`` for W_2 on a one-dimensional CPU ``DeviceMesh``, which
    turns the weights into ``DTensor`` shards and inserts the all-reduce itself.

    Returns this rank's outputs ``"attention"`` and ``"ffn"`` ``(B, L, D)`` from the hand-made split,
    ``"ffn_torch"`` from ``torch.distributed.tensor.parallel``, and ``"all_reduce"``: the number of elements of
    each all-reduce the hand-made split took part in (counted by wrapping ``dist.all_reduce``).
    """
    import copy

    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    counted: list[int] = []
    original = dist.all_reduce

    def counting_all_reduce(tensor: Tensor, *args: Any, **kwargs: Any) -> Any:
        counted.append(tensor.numel())
        return original(tensor, *args, **kwargs)

    dist.all_reduce = counting_all_reduce
    try:
        with torch.no_grad():
            out_attention = tensor_parallel_attention(x, shard_attention(attention, rank, world_size))
            out_ffn = tensor_parallel_feed_forward(x, shard_feed_forward(ffn, rank, world_size), ffn.activation)
    finally:
        dist.all_reduce = original
    mesh = init_device_mesh("cpu", (world_size,))
    torch_ffn = parallelize_module(copy.deepcopy(ffn), mesh, {"w_1": ColwiseParallel(), "w_2": RowwiseParallel()})
    with torch.no_grad():
        out_torch = torch_ffn(x)  # replicated input in, replicated (B, L, D) output out
    if hasattr(out_torch, "wait"):  # an AsyncCollectiveTensor: its all-reduce may still be in flight
        out_torch = out_torch.wait()
    return {"attention": out_attention, "ffn": out_ffn, "ffn_torch": out_torch, "all_reduce": counted}
