"""Time tformer's attention forward against torch's fused SDPA (a script, not a test).

    python benchmarks/attention_speed.py [--repeats N] [--batch B --heads H --length L --head-dim Dh]
                                         [--allocator default|thp|reuse ...]

Defaults: B=8, H=12, L=S=1024, Dh=64, float32, CPU, no autograd (inference forward). For each memory-allocator
setting below, prints the median time of ours and of ``torch.nn.functional.scaled_dot_product_attention``
without a mask and with a causal bool mask, and the ratio ours/torch. Target ratio <= 1.2.

Not like for like: torch's fused kernel never materialises the (B, H, L, S) weights, while ours must build and
return them (the book plots them), so ours also writes B·H·L·S floats (384 MiB at the defaults). The "floor"
line is the least any function that returns the weights can cost with ``torch.matmul``: Q Kᵀ into a fresh
(B, H, L, S) tensor, an in-place softmax over it and weights @ V, each timed alone, summed, over torch's no-mask
time. (Given a bool ``attn_mask``, torch's kernel does not skip the masked half; with ``is_causal=True`` it
would: about 1.35x faster again on the 2-core CPU.)

A fresh 384 MiB tensor per call makes the result depend on the memory allocator, so each setting runs in its
own process, started with only that setting's variables (they are read when the process starts; inherited
``LD_PRELOAD``, ``GLIBC_TUNABLES``, ``MALLOC_*`` and ``THP_MEM_ALLOC_ENABLE`` are removed):

- ``default``: glibc's malloc hands the block back to the kernel on free, so every call page-faults it in again;
- ``thp``: ``THP_MEM_ALLOC_ENABLE=1``, PyTorch's transparent-huge-page allocator (512x fewer faults);
- ``reuse``: glibc tunables that keep freed memory for the next call (``MALLOC_MMAP_THRESHOLD_`` etc.), the role
  jemalloc or tcmalloc play in PyTorch's CPU performance tuning guide.

Rounds are interleaved (ours, torch, ours, torch, ...) so that drift in machine state hits every case alike.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

# Variables that change how memory is allocated; removed from every child's environment before its own are set.
ALLOCATOR_VARIABLES = ("LD_PRELOAD", "GLIBC_TUNABLES", "THP_MEM_ALLOC_ENABLE")
ALLOCATORS: dict[str, dict[str, str]] = {
    "default": {},
    "thp": {"THP_MEM_ALLOC_ENABLE": "1"},
    "reuse": {
        "MALLOC_MMAP_THRESHOLD_": str(2**31 - 1),  # large blocks come from the heap, not a fresh mapping
        "MALLOC_TRIM_THRESHOLD_": str(2**32 - 1),  # and freeing them does not return them to the kernel
        "MALLOC_TOP_PAD_": str(2**29),
    },
}


def median_seconds(fns: dict[str, Callable[[], object]], repeats: int, warmup: int) -> dict[str, float]:
    """Median wall-clock seconds of each ``fn()``, timed in interleaved rounds after ``warmup`` untimed rounds.

    Interleaving (a, b, c, a, b, c, ...) exposes every function to the same drift in machine state (the
    allocator's pages, clock speed, a neighbour's load); timing one function's runs back to back and then the
    next's made whichever ran first up to 2.8x slower at L = 256.
    """
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def measure(args: argparse.Namespace) -> None:
    """Time every case under this process's allocator (a child started by :func:`main`); one row per case."""
    import torch
    import torch.nn.functional as F

    from tformer.functional import scaled_dot_product_attention
    from tformer.masks import causal_mask

    torch.manual_seed(0)
    shape = (args.batch, args.heads, args.length, args.head_dim)
    q, k, v = (torch.randn(shape) for _ in range(3))
    mask = causal_mask(args.length)
    scaled_q, key_t = q / math.sqrt(args.head_dim), k.transpose(-2, -1)
    weights = torch.softmax(torch.matmul(scaled_q, key_t), dim=-1)  # (B, H, L, S)
    cases = {
        "ours, no mask": lambda: scaled_dot_product_attention(q, k, v),
        "torch, no mask": lambda: F.scaled_dot_product_attention(q, k, v),
        "ours, causal": lambda: scaled_dot_product_attention(q, k, v, mask),
        "torch, causal": lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        "Q K^T": lambda: torch.matmul(scaled_q, key_t),
        "softmax": lambda: torch.softmax(weights, dim=-1, out=weights),
        "weights @ V": lambda: torch.matmul(weights, v),
    }
    with torch.inference_mode():
        t = median_seconds(cases, args.repeats, args.warmup)
    floor = t["Q K^T"] + t["softmax"] + t["weights @ V"]
    rows = [(name, t[f"ours, {name}"], t[f"torch, {name}"]) for name in ("no mask", "causal")]
    for name, ours, ref in [*rows, ("floor", floor, t["torch, no mask"])]:
        print(f"{args.child:<9}{name:<9}{1e3 * ours:>10.1f}{1e3 * ref:>11.1f}{ours / ref:>12.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=15, help="timed rounds (median reported), >= 1")
    parser.add_argument("--warmup", type=int, default=2, help="untimed rounds first, >= 0")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument(
        "--allocator", choices=list(ALLOCATORS), nargs="+", default=list(ALLOCATORS), help="settings to run"
    )
    parser.add_argument("--child", choices=list(ALLOCATORS), help=argparse.SUPPRESS)  # set by main() only
    args = parser.parse_args()
    if args.repeats < 1 or args.warmup < 0:
        parser.error(f"expected --repeats >= 1 and --warmup >= 0, got {args.repeats} and {args.warmup}")
    if args.child is not None:
        measure(args)
        return

    import torch

    print(
        f"torch {torch.__version__}, threads={torch.get_num_threads()}, float32 CPU, "
        f"B={args.batch} H={args.heads} L=S={args.length} Dh={args.head_dim}, "
        f"median of {args.repeats} interleaved rounds after {args.warmup} warm-up"
    )
    print(f"{'alloc':<9}{'case':<9}{'ours (ms)':>10}{'torch (ms)':>11}{'ours/torch':>12}", flush=True)
    sizes = ["--repeats", str(args.repeats), "--warmup", str(args.warmup), "--batch", str(args.batch)]
    sizes += ["--heads", str(args.heads), "--length", str(args.length), "--head-dim", str(args.head_dim)]
    clean = {
        k: v for k, v in os.environ.items() if k not in ALLOCATOR_VARIABLES and not k.startswith("MALLOC_")
    }
    for name in args.allocator:
        child = [sys.executable, __file__, *sizes, "--child", name]
        subprocess.run(child, env={**clean, **ALLOCATORS[name]}, check=True)


if __name__ == "__main__":
    main()
