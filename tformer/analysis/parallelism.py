"""Memory, communication and idle-time formulas for training on many devices (chapter ``15_parallelism``).

- **Sharded data parallel** (ZeRO, Rajbhandari et al. 2020, §3 and Figure 1): :func:`training_memory_bytes`
  gives the bytes of parameters, gradients and optimizer states per device under plain data parallelism
  (``"ddp"``) and ZeRO stages 1–3 (``"zero1"`` shards the optimizer states, ``"zero2"`` also the gradients,
  ``"zero3"`` also the parameters; PyTorch's FSDP with full sharding is ZeRO-3). With mixed-precision Adam a
  parameter costs 2 (fp16 weight) + 2 (fp16 gradient) + K = 12 (fp32 master weight, momentum, variance) bytes:
  16 bytes per parameter under DDP. :func:`communication_elements` is the traffic per device and step (§7).
- **Tensor parallel** (Megatron-LM, Shoeybi et al. 2019, §3): :func:`tensor_parallel_all_reduce_elements`
  counts the all-reduced numbers of one Transformer layer split by heads and hidden units, to compare with its
  FLOPs (:func:`layer_flops`).
- **Pipeline parallel** (GPipe, Huang et al. 2019, §2.3): :func:`bubble_fraction` is the idle share
  (p − 1)/(m + p − 1) for p stages and m micro-batches; :func:`simulate_pipeline` schedules the micro-batches
  task by task and measures the same share.
- :func:`choose_strategy`: the least communication-hungry of these that fits a device, the chapter's table.

Counts are exact integers of numbers or bytes; "GB" in the chapter is 10⁹ bytes, as in the ZeRO paper.
Activations (which depend on batch and length) are left out of the memory formulas, as in the paper's Figure 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tformer._checks import check_flags, check_int
from tformer.analysis.complexity import feed_forward_flops, self_attention_flops

__all__ = [
    "STRATEGIES",
    "MemoryBreakdown",
    "PipelineRun",
    "PipelineTask",
    "bubble_fraction",
    "choose_strategy",
    "communication_elements",
    "layer_flops",
    "simulate_pipeline",
    "tensor_parallel_all_reduce_elements",
    "training_memory_bytes",
]

Strategy = Literal["ddp", "zero1", "zero2", "zero3"]
STRATEGIES: tuple[str, ...] = ("ddp", "zero1", "zero2", "zero3")


def _check_strategy(strategy: object) -> str:
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy: expected one of {STRATEGIES}, got {strategy!r}")
    return str(strategy)


# ----------------------------------------------------------------------------------------------- ZeRO memory
@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes one device holds for training state (activations excluded). All fields in bytes (floats)."""

    parameters: float
    gradients: float
    optimizer: float

    @property
    def total(self) -> float:
        """parameters + gradients + optimizer states, in bytes."""
        return self.parameters + self.gradients + self.optimizer


def training_memory_bytes(
    num_params: int,
    strategy: Strategy,
    num_devices: int,
    *,
    param_bytes: int = 2,
    grad_bytes: int = 2,
    optimizer_bytes: int = 12,
) -> MemoryBreakdown:
    """Bytes of model states per device under DDP or ZeRO-1/2/3 (Rajbhandari et al. 2020, §3, Figure 1).

    With Ψ = ``num_params``, N = ``num_devices`` and K = ``optimizer_bytes``, per device:

    ======== ============ ============ ============
    strategy parameters   gradients    optimizer
    ======== ============ ============ ============
    ddp      2Ψ           2Ψ           KΨ
    zero1    2Ψ           2Ψ           KΨ / N
    zero2    2Ψ           2Ψ / N       KΨ / N
    zero3    2Ψ / N       2Ψ / N       KΨ / N
    ======== ============ ============ ============

    (2 stands for ``param_bytes`` / ``grad_bytes``.) The defaults are the paper's mixed-precision Adam: fp16
    weights and gradients, and K = 12 bytes of fp32 master weights, momentum and variance; plain float32 Adam
    is ``param_bytes=4, grad_bytes=4, optimizer_bytes=8``. Shards are taken as exact fractions Ψ/N (a real
    implementation pads each shard up to a whole number of elements).

    Raises:
        TypeError/ValueError: if a count is not a positive int (``optimizer_bytes`` may be 0), or ``strategy``
            is not one of :data:`STRATEGIES`.
    """
    num_params = check_int("num_params", num_params, 1)
    num_devices = check_int("num_devices", num_devices, 1)
    param_bytes = check_int("param_bytes", param_bytes, 1)
    grad_bytes = check_int("grad_bytes", grad_bytes, 1)
    optimizer_bytes = check_int("optimizer_bytes", optimizer_bytes, 0)
    stage = STRATEGIES.index(_check_strategy(strategy))  # 0 for DDP, else the ZeRO stage
    n = num_devices
    return MemoryBreakdown(
        parameters=param_bytes * num_params / (n if stage >= 3 else 1),
        gradients=grad_bytes * num_params / (n if stage >= 2 else 1),
        optimizer=optimizer_bytes * num_params / (n if stage >= 1 else 1),
    )


def communication_elements(num_params: int, strategy: Strategy, num_devices: int) -> float:
    """Numbers one device sends per training step (and receives as many), with ring collectives.

    A ring all-reduce of Ψ numbers over N devices is a reduce-scatter plus an all-gather, each sending
    (N − 1)/N · Ψ per device. DDP all-reduces the gradients: 2(N − 1)/N · Ψ. ZeRO-1 and ZeRO-2 reduce-scatter
    the gradients and all-gather the updated parameters: the same. ZeRO-3 all-gathers the parameters twice
    (forward and backward) and reduce-scatters the gradients: 3(N − 1)/N · Ψ, 1.5× DDP (Rajbhandari et al.
    2020, §7.2.1–7.2.2, which round (N − 1)/N to 1).

    Raises:
        TypeError/ValueError: as :func:`training_memory_bytes`.
    """
    num_params = check_int("num_params", num_params, 1)
    num_devices = check_int("num_devices", num_devices, 1)
    passes = 3 if _check_strategy(strategy) == "zero3" else 2
    return passes * (num_devices - 1) / num_devices * num_params


# ----------------------------------------------------------------------------------------------- tensor parallel
def tensor_parallel_all_reduce_elements(batch: int, length: int, d_model: int, *, backward: bool = False) -> int:
    """Numbers all-reduced by one Transformer layer (self-attention + FFN) split Megatron-style, per device.

    Forward: one all-reduce of the (B, L, D) partial outputs after the attention's W_O and one after the FFN's
    W_2: 2·B·L·D (Shoeybi et al. 2019, §3, Figure 4, operator g). Backward adds two more of the same size, for
    the gradient with respect to the layer input (operator f), so 4·B·L·D per training step.

    Raises:
        TypeError/ValueError: if a size is not a positive int.
    """
    check_flags(backward=backward)
    batch, length, d_model = (check_int(name, value, 1)  # Python ints: NumPy ones could overflow
        for name, value in (("batch", batch), ("length", length), ("d_model", d_model)))
    return (4 if backward else 2) * batch * length * d_model


def layer_flops(batch: int, length: int, d_model: int, d_ff: int) -> int:
    """Forward FLOPs of one encoder layer (self-attention with projections + FFN) over B sequences of length L.

    B · (4·L²·D + 8·L·D² + 4·L·D·F), from :func:`tformer.analysis.complexity.self_attention_flops` and
    :func:`~tformer.analysis.complexity.feed_forward_flops`. Tensor parallelism over N devices gives each 1/N.
    """
    batch = check_int("batch", batch, 1)
    per_sequence = self_attention_flops(length, d_model, projections=True) + feed_forward_flops(length, d_model,
                                                                                                 d_ff)
    return batch * per_sequence


# ----------------------------------------------------------------------------------------------- pipeline
def bubble_fraction(num_stages: int, num_microbatches: int) -> float:
    """Share of a GPipe step each device spends idle: (p − 1)/(m + p − 1) (Huang et al. 2019, §2.3).

    With p stages taking equal time per micro-batch, a step lasts m + p − 1 slots (forward, and again
    backward) of which each stage works m. (Narayanan et al. 2021 quote the bubble relative to the *ideal*
    time instead: (p − 1)/m.)

    Raises:
        TypeError/ValueError: if ``num_stages`` or ``num_microbatches`` is not a positive int.
    """
    p = check_int("num_stages", num_stages, 1)
    m = check_int("num_microbatches", num_microbatches, 1)
    return (p - 1) / (m + p - 1)


@dataclass(frozen=True)
class PipelineTask:
    """One forward (``"F"``) or backward (``"B"``) pass of one micro-batch on one stage, in time units."""

    stage: int
    microbatch: int
    phase: str
    start: float
    end: float


@dataclass(frozen=True)
class PipelineRun:
    """A simulated pipeline step: every task, the step's duration, and the idle share of the devices."""

    tasks: list[PipelineTask]
    num_stages: int
    makespan: float

    @property
    def bubble_fraction(self) -> float:
        """1 − (busy time summed over stages) / (stages × makespan)."""
        busy = sum(task.end - task.start for task in self.tasks)
        return 1.0 - busy / (self.num_stages * self.makespan)


def simulate_pipeline(num_stages: int, num_microbatches: int, *, forward_time: float = 1.0,
                      backward_time: float = 2.0) -> PipelineRun:
    """Schedule one GPipe step task by task (Huang et al. 2019, §2.3, Figure 2c).

    Stage s runs the forward passes of micro-batches 0 … m − 1 in order, then their backward passes in reverse
    order. A forward pass needs the previous stage's forward of the same micro-batch; a backward pass needs the
    next stage's backward (the last stage: its own forward). Each task starts as soon as its input is ready
    and its stage is free: a discrete-event simulation, independent of :func:`bubble_fraction`.

    Raises:
        TypeError/ValueError: if a count is not a positive int or a time is not positive.
    """
    p = check_int("num_stages", num_stages, 1)
    m = check_int("num_microbatches", num_microbatches, 1)
    if not (forward_time > 0 and backward_time > 0):
        raise ValueError(f"forward_time, backward_time: expected positive, got {forward_time}, {backward_time}")
    queues = [[("F", j) for j in range(m)] + [("B", j) for j in reversed(range(m))] for _ in range(p)]
    done: dict[tuple[str, int, int], float] = {}  # (phase, stage, micro-batch) -> end time
    free = [0.0] * p
    tasks: list[PipelineTask] = []
    while any(queues):
        progressed = False
        for s in range(p):
            if not queues[s]:
                continue
            phase, j = queues[s][0]
            if phase == "F":
                needs = ("F", s - 1, j) if s > 0 else None
            else:
                needs = ("B", s + 1, j) if s < p - 1 else ("F", s, j)
            if needs is not None and needs not in done:
                continue
            start = max(free[s], done[needs] if needs is not None else 0.0)
            end = start + (forward_time if phase == "F" else backward_time)
            done[(phase, s, j)] = free[s] = end
            tasks.append(PipelineTask(s, j, phase, start, end))
            queues[s].pop(0)
            progressed = True
        assert progressed, "pipeline schedule deadlocked"  # internal invariant: the dependencies form a DAG
    return PipelineRun(tasks, p, max(task.end for task in tasks))


# ----------------------------------------------------------------------------------------------- which to use
def choose_strategy(num_params: int, num_devices: int, device_bytes: float, *, param_bytes: int = 2,
                    grad_bytes: int = 2, optimizer_bytes: int = 12) -> str:
    """The data-parallel strategy with the least traffic whose model states fit one device.

    Tried in order DDP, ZeRO-1, ZeRO-2 (the same traffic as DDP, less memory), ZeRO-3 (1.5× the traffic):
    the first whose :func:`training_memory_bytes` total is at most ``device_bytes``. Returns its name, or
    ``"none fits"`` when even ZeRO-3 does not: the model states alone, 16Ψ/N bytes per device under mixed-precision
    Adam, exceed a device. Splitting the model by tensor or pipeline parallelism over the same N devices leaves
    the same 16Ψ/N per device, so it does not help; what helps is more devices, offloading states to CPU
    memory, or fewer bytes per parameter. Activations are not counted, so the answer is optimistic.

    Raises:
        TypeError/ValueError: as :func:`training_memory_bytes`, or if ``device_bytes`` is not positive.
    """
    if not device_bytes > 0:
        raise ValueError(f"device_bytes: expected a positive number of bytes, got {device_bytes!r}")
    for strategy in STRATEGIES:
        total = training_memory_bytes(num_params, strategy, num_devices, param_bytes=param_bytes,
                                      grad_bytes=grad_bytes, optimizer_bytes=optimizer_bytes).total
        if total <= device_bytes:
            return strategy
    return "none fits"
