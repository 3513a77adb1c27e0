"""Cost formulas for sequence layers, and the small measuring tools that check them (``13_complexity``).

Formulas count floating-point operations (FLOPs) the way ``torch.utils.flop_counter.FlopCounterMode`` does:
one multiply-add is 2 FLOPs, so an (m × k) @ (k × n) product costs 2·m·k·n. Only matrix products are counted;
softmax, activations, biases and normalisation are lower-order terms (O(n²) or O(n·d)) and are left out, as in
the per-layer column of Vaswani et al. 2017, Table 1. Every formula is for **one sequence** (batch 1); multiply
by B for a batch.

| layer (width d, length n) | FLOPs here | Table 1 (Vaswani et al. 2017) |
|---|---|---|
| self-attention core, QKᵀ and weights·V | 4·n²·d | O(n²·d) |
| … plus the four projections W_Q, W_K, W_V, W_O | + 8·n·d² | (not in the table) |
| Elman RNN, input and recurrent products | 4·n·d² (LSTM ×4, GRU ×3) | O(n·d²) |
| 1-D convolution, kernel k, d → d channels | 2·k·n·d² | O(k·n·d²) |
| position-wise feed-forward, width F | 4·n·d·F | (§3.3) |

Measuring tools: :func:`median_time` (seconds on the wall clock or the CPU clock, median over repeats after
warm-up, CUDA-synchronised) and :func:`median_times` (several functions timed in turn, round by round, so
load changes hit them alike),
:func:`peak_tensor_bytes` (the most bytes held at once by tensors that torch operators *returned* during a call,
on any device; scratch buffers a fused kernel allocates internally are invisible to it), :func:`matmul_gflops`
(the machine's matrix-multiply rate, the ceiling the layers are compared with), :func:`count_operators` (how
many times each torch operator ran: n matrix products for an RNN, a fixed few for attention) and
:func:`loglog_slope`.

Dimension letters: B batch, n (= L = S) sequence length, d (= D) model width, H heads, Dh head width, k kernel.
"""

from __future__ import annotations

import math
import statistics
import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tformer._checks import check_choice, check_flags, check_int, check_type
from tformer.environment import clock as make_clock

__all__ = [
    "attention_matrix_bytes",
    "conv1d_flops",
    "count_operators",
    "feed_forward_flops",
    "kv_cache_bytes",
    "loglog_slope",
    "matmul_flops",
    "matmul_gflops",
    "maximum_path_length",
    "median_time",
    "median_times",
    "peak_tensor_bytes",
    "rnn_flops",
    "self_attention_flops",
    "sequential_operations",
    "sweep_times",
]

LAYERS = ("self_attention", "rnn", "conv")


def _layer(layer: str) -> str:
    return check_choice("layer", layer, LAYERS)


# ----------------------------------------------------------------------------------------------- FLOP formulas
def matmul_flops(m: int, k: int, n: int) -> int:
    """FLOPs of an (m × k) @ (k × n) product: m·n dot products of length k, each k multiplies and k adds.

    Raises:
        TypeError / ValueError: if a size is not a positive int.
    """
    return 2 * check_int("m", m, 1) * check_int("k", k, 1) * check_int("n", n, 1)


def self_attention_flops(n: int, d: int, *, projections: bool = False) -> int:
    """FLOPs of one self-attention layer over one sequence of length n and width d (any number of heads).

    The core is QKᵀ ((n × d) @ (d × n), summed over heads: 2·n²·d) and weights·V (another 2·n²·d): 4·n²·d,
    the O(n²·d) of Vaswani et al. 2017, Table 1. With ``projections`` the four d × d projections W_Q, W_K,
    W_V, W_O (§3.2.2) add 4 · 2·n·d² = 8·n·d².

    Raises:
        TypeError / ValueError: if ``n`` or ``d`` is not a positive int.
    """
    check_flags(projections=projections)
    core = 2 * matmul_flops(n, d, n)
    return core + (4 * matmul_flops(n, d, d) if projections else 0)


def rnn_flops(n: int, d: int, *, gates: int = 1, input_size: int | None = None) -> int:
    """FLOPs of one recurrent layer with hidden width d over n steps: per step x_t W_ih and h_{t−1} W_hh.

    Each step multiplies a (1 × input_size) and a (1 × d) row by matrices with ``gates``·d columns:
    2·gates·d·(input_size + d), so 4·n·d² for an Elman RNN with input_size = d — the O(n·d²) of Vaswani et
    al. 2017, Table 1. ``gates=4`` is the LSTM (Hochreiter & Schmidhuber 1997), ``gates=3`` the GRU (Cho et al.
    2014): the seeds' "×4" and "×3".

    Raises:
        TypeError / ValueError: if a size is not a positive int.
    """
    inputs = d if input_size is None else check_int("input_size", input_size, 1)
    g = check_int("gates", gates, 1)
    return check_int("n", n, 1) * (matmul_flops(1, inputs, g * d) + matmul_flops(1, d, g * d))


def conv1d_flops(n: int, d: int, k: int) -> int:
    """FLOPs of a 1-D convolution with kernel width k, d input and d output channels, n output positions.

    Each output position is a (1 × k·d) @ (k·d × d) product: 2·k·n·d², the O(k·n·d²) of Vaswani et al. 2017,
    Table 1 (padding keeps n positions).

    Raises:
        TypeError / ValueError: if a size is not a positive int.
    """
    return check_int("n", n, 1) * matmul_flops(1, check_int("k", k, 1) * d, d)


def feed_forward_flops(n: int, d: int, d_ff: int) -> int:
    """FLOPs of the position-wise feed-forward network d → F → d over n positions: 4·n·d·F (Vaswani §3.3)."""
    return matmul_flops(n, d, d_ff) + matmul_flops(n, d_ff, d)


# --------------------------------------------------------------------------------------------- memory formulas
def _element_size(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=check_type("dtype", dtype, torch.dtype, "a torch.dtype")).element_size()


def attention_matrix_bytes(
    n: int,
    s: int | None = None,
    *,
    num_heads: int = 1,
    num_layers: int = 1,
    batch: int = 1,
    dtype: torch.dtype = torch.float32,
) -> int:
    """Bytes of the attention weights (B, H, L, S) materialised by every layer: B·layers·H·L·S·element size.

    With n = 1024 (GPT-2's context), one head of one layer in float32 holds 1024² = 1,048,576 weights, 4 MiB.
    Training keeps every layer's weights for the backward pass; FlashAttention (Dao et al. 2022) avoids storing
    them at all.

    Args:
        n: query length L; ``s`` the key length S (default n).

    Raises:
        TypeError / ValueError: if a size is not a positive int or ``dtype`` is not a torch dtype.
    """
    keys = n if s is None else check_int("s", s, 1)
    count = check_int("batch", batch, 1) * check_int("num_layers", num_layers, 1) * check_int("num_heads", num_heads, 1)
    return count * check_int("n", n, 1) * keys * _element_size(dtype)


def kv_cache_bytes(
    seq_len: int,
    *,
    num_layers: int,
    num_kv_heads: int,
    head_dim: int,
    batch: int = 1,
    dtype: torch.dtype = torch.float32,
) -> int:
    """Bytes of a decoder's key/value cache after ``seq_len`` positions: 2·B·layers·H_kv·S·Dh·element size.

    The 2 counts keys and values. Multi-head attention caches H_kv = H heads; grouped-query attention
    (Ainslie et al. 2023) caches H_kv = number of groups; multi-query attention (Shazeer 2019) caches one.

    Raises:
        TypeError / ValueError: if a size is not a positive int or ``dtype`` is not a torch dtype.
    """
    count = check_int("batch", batch, 1) * check_int("num_layers", num_layers, 1) * check_int("num_kv_heads", num_kv_heads, 1)
    return 2 * count * check_int("seq_len", seq_len, 1) * check_int("head_dim", head_dim, 1) * _element_size(dtype)


# ------------------------------------------------------------------------------------- parallelism and paths
def sequential_operations(layer: str, n: int) -> int:
    """Operations that must run one after another in a layer over n positions (Vaswani et al. 2017, Table 1).

    Self-attention and convolution compute every position at once (1); a recurrent layer needs h_{t−1}
    before h_t (n).

    Raises:
        ValueError: if ``layer`` is not ``"self_attention"``, ``"rnn"`` or ``"conv"``; see ``n``.
    """
    n = check_int("n", n, 1)
    return n if _layer(layer) == "rnn" else 1


def maximum_path_length(layer: str, n: int, *, k: int = 3, dilated: bool = False) -> int:
    """Fewest layers (or recurrent steps) a signal crosses between the first and last of n positions.

    Vaswani et al. 2017, Table 1 and §4: self-attention connects every pair in 1 layer; a recurrent layer
    needs n − 1 steps; causal convolutions with kernel k widen the receptive field by k − 1 per layer, so
    ⌈(n − 1)/(k − 1)⌉ layers (O(n/k)); with dilations 1, k, k², … (WaveNet-style) the field is k^ℓ, so
    ⌈log_k n⌉ layers (O(log_k n)).

    Raises:
        TypeError: if ``n`` or (for convolutions) ``k`` is not an int.
        ValueError: on an unknown ``layer``, ``n < 1``, or ``k < 2`` for convolutions.
    """
    check_flags(dilated=dilated)
    n = check_int("n", n, 1)
    layer = _layer(layer)
    if layer == "self_attention":
        return 1
    if layer == "rnn":
        return n - 1
    k = check_int("k", k, 2)  # a convolution of width 1 never mixes positions
    if not dilated:
        return -(-(n - 1) // (k - 1))
    layers, field = 0, 1
    while field < n:  # integer loop: no floating-point log at exact powers of k
        layers, field = layers + 1, field * k
    return layers


# --------------------------------------------------------------------------------------------- measurement
def median_time(
    fn: Callable[[], Any],
    *,
    repeats: int = 7,
    warmup: int = 2,
    device: torch.device | str | None = None,
    clock: Literal["wall", "cpu"] = "wall",
) -> float:
    """Median seconds of ``fn()`` over ``repeats`` calls, after ``warmup`` untimed calls.

    ``clock="wall"`` reads ``time.perf_counter`` (elapsed time, what a user waits). ``clock="cpu"`` reads
    ``time.process_time``: the CPU seconds this process used, summed over its threads, which other programs
    on a shared machine cannot inflate by taking turns on the cores (run torch single-threaded for a clean
    measure of work). The median resists outliers. On CUDA pass ``device`` so each call is synchronised
    (kernels run asynchronously otherwise and the clock would stop too early); the CPU clock is meaningless
    there and refused. To compare several functions use :func:`median_times`, which interleaves them.

    Raises:
        TypeError / ValueError: if ``fn`` is not callable (reported as ``fns[0]``), ``repeats`` is not a
            positive int, ``warmup`` is negative, ``clock`` is unknown, or ``clock="cpu"`` is asked for on a
            CUDA device.
    """
    return median_times([fn], repeats=repeats, warmup=warmup, device=device, clock=clock)[0]


def median_times(
    fns: Sequence[Callable[[], Any]],
    *,
    repeats: int = 7,
    warmup: int = 2,
    device: torch.device | str | None = None,
    clock: Literal["wall", "cpu"] = "wall",
) -> list[float]:
    """Median seconds of each ``fns[i]()`` over ``repeats`` rounds, the functions timed in turn.

    Each round times every function once, in order, so a change in the machine's load that lasts longer
    than a round (another program starting, memory traffic from a neighbour) lands on all of them alike
    instead of on whichever was being timed at that moment. With several functions each timed call comes
    right after an untimed call of the same function, so it finds the caches as that function leaves them,
    not as the previous function in the round left them (a small product timed right after a large one
    reads several times slower). ``warmup`` untimed rounds come first. Clocks, CUDA synchronisation and the median are as in
    :func:`median_time`.

    Returns:
        One median per function, in seconds, in the order of ``fns``.

    Raises:
        TypeError / ValueError: if ``fns`` is not a sequence (a list or tuple; a generator or an
            ``nn.ModuleList`` is refused), is empty or holds something not callable, ``repeats`` is not a
            positive int, ``warmup`` is negative, ``clock`` is unknown, or ``clock="cpu"`` is asked for on a
            CUDA device.
    """
    if isinstance(fns, (str, bytes)) or not isinstance(fns, Sequence):
        raise TypeError(f"fns: expected a sequence of callables, got {type(fns).__name__}")
    if not fns:
        raise ValueError("fns: expected at least one callable, got an empty sequence")
    for i, fn in enumerate(fns):
        if not callable(fn):
            raise TypeError(f"fns[{i}]: expected a callable, got {type(fn).__name__}")
    repeats = check_int("repeats", repeats, 1)
    warmup = check_int("warmup", warmup, 0)
    read = make_clock(clock, device)  # synchronises with a GPU before each reading
    for _ in range(warmup):
        for fn in fns:
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, record in zip(fns, times, strict=True):
            if len(fns) > 1:  # untimed: the timed call below then finds the caches as fn itself leaves them
                fn()
            start = read()
            fn()
            record.append(read() - start)
    return [statistics.median(record) for record in times]


def sweep_times(
    sweeps: Mapping[str, Sequence[Callable[[], Any]]],
    *,
    repeats: int = 7,
    warmup: int = 2,
    device: torch.device | str | None = None,
    clock: Literal["wall", "cpu"] = "wall",
) -> dict[str, list[float]]:
    """Median seconds of every call of several sweeps, all timed in turn by one :func:`median_times`.

    ``sweeps`` maps a name (a layer, a kernel) to its calls, one per size; every call of every sweep takes
    its turn in every round, so a load change hits all points of all curves alike.

    Returns:
        ``{name: [median seconds per call]}``, in the order of ``sweeps`` and of each sweep's calls.

    Raises:
        TypeError: if ``sweeps`` is not a mapping, or a sweep is not a sequence of callables.
        ValueError: if a sweep is empty, or on the arguments :func:`median_times` refuses.
    """
    if not isinstance(sweeps, Mapping):
        raise TypeError(f"sweeps: expected a mapping of name -> calls, got {type(sweeps).__name__}")
    for name, calls in sweeps.items():
        if isinstance(calls, (str, bytes)) or not isinstance(calls, Sequence):
            raise TypeError(f"sweeps[{name!r}]: expected a sequence of callables, got {type(calls).__name__}")
        if not calls:
            raise ValueError(f"sweeps[{name!r}]: expected at least one callable, got an empty sequence")
    flat = [fn for calls in sweeps.values() for fn in calls]
    seconds = iter(median_times(flat, repeats=repeats, warmup=warmup, device=device, clock=clock))
    return {name: [next(seconds) for _ in calls] for name, calls in sweeps.items()}


def matmul_gflops(
    size: int = 1024,
    *,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
    repeats: int = 7,
    clock: Literal["wall", "cpu"] = "wall",
) -> float:
    """Measured rate of one square (size × size) matrix product, in GFLOP/s (10⁹ FLOPs per second).

    This is the practical ceiling for layers made of matrix products on this machine and dtype. ``clock`` as
    :func:`median_time` (with ``"cpu"`` the rate is per CPU-second, i.e. per core when torch runs one thread).

    Raises:
        TypeError / ValueError: if ``size`` or ``repeats`` is not a positive int, or see :func:`median_time`.
    """
    a = torch.randn(check_int("size", size, 1), size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    seconds = median_time(lambda: a @ b, repeats=repeats, warmup=2, device=device, clock=clock)
    return matmul_flops(size, size, size) / seconds / 1e9


class _LiveTensorBytes(TorchDispatchMode):
    """Counts the bytes of storages created by operators while active; a storage is released when freed."""

    def __init__(self) -> None:
        super().__init__()
        self.current = 0
        self.peak = 0
        self._seen: set[int] = set()

    def _release(self, key: int, nbytes: int) -> None:
        self._seen.discard(key)
        self.current -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        inputs = {t.untyped_storage().data_ptr() for t in _tensors((args, kwargs))}
        for tensor in _tensors(out):
            storage = tensor.untyped_storage()
            key = storage.data_ptr()
            if key in inputs or key in self._seen or storage.nbytes() == 0:
                continue  # a view or in-place result, or already counted
            self._seen.add(key)
            self.current += storage.nbytes()
            weakref.finalize(storage, self._release, key, storage.nbytes())
        self.peak = max(self.peak, self.current)
        return out


class _OperatorCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.counts[str(func.overloadpacket.__name__)] += 1
        return func(*args, **(kwargs or {}))


def count_operators(fn: Callable[[], Any]) -> Counter[str]:
    """How many times each torch operator ran during ``fn()``, e.g. ``{"mm": 32, "tanh": 16, ...}``.

    Counts the operators torch dispatches after autograd (``aten`` names without the ``aten.`` prefix): a
    recurrent layer over n steps issues its matrix products n times, one after another, while self-attention
    issues a fixed number of (large) products whatever n is.
    """
    counter = _OperatorCounter()
    with counter:
        fn()
    return counter.counts


def _tensors(tree: Any) -> list[torch.Tensor]:
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, dict):
        return [t for value in tree.values() for t in _tensors(value)]
    if isinstance(tree, (list, tuple)):
        return [t for value in tree for t in _tensors(value)]
    return []


def peak_tensor_bytes(fn: Callable[[], Any]) -> int:
    """Peak bytes held at once by tensors that torch operators returned while ``fn()`` ran.

    Measured, not computed: a ``TorchDispatchMode`` sees every operator's outputs, adds the size of each new
    storage, and subtracts it when the storage is freed (views and in-place results are not new storage).
    Tensors that existed before the call are not counted; the result of ``fn`` is (it is alive at the end).
    Tensors kept for the backward pass stay alive, so under autograd the peak includes them. Blind spot:
    scratch memory a fused kernel allocates internally and frees before returning (FlashAttention's tiles)
    is not an operator output and is not seen; on CUDA, ``torch.cuda.max_memory_allocated`` sees it.

    Returns:
        Bytes (an int).
    """
    tracker = _LiveTensorBytes()
    with tracker:
        result = fn()
    peak = tracker.peak
    del result
    return peak


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of log y against log x: the measured exponent p in y ∝ x^p.

    Raises:
        ValueError: if the sequences differ in length, hold fewer than 2 points, or a value is not positive.
    """
    if len(x) != len(y) or len(x) < 2:
        raise ValueError(f"x, y: expected two sequences of equal length >= 2, got {len(x)} and {len(y)}")
    if min(x) <= 0 or min(y) <= 0:
        raise ValueError(f"x, y: expected positive values for a log-log fit, got minima {min(x)} and {min(y)}")
    lx = [math.log(v) for v in x]
    ly = [math.log(v) for v in y]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    num = sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True))
    den = sum((a - mx) ** 2 for a in lx)
    if den == 0:
        raise ValueError(f"x: expected at least two different values, got only {x[0]}")
    return num / den
