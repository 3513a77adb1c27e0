"""Time tformer's attention forward against torch's fused SDPA (a script, not a test).

    python benchmarks/attention_speed.py [--repeats N] [--batch B --heads H --length L --head-dim Dh]

Defaults: B=8, H=12, L=S=1024, Dh=64, float32, CPU, no autograd (inference forward). Prints the median time
of each over ``--repeats`` runs after warm-up, without a mask and with a causal mask, and the ratio ours/torch.
Target ratio <= 1.2.

Not like for like: torch's fused kernel never materialises the (B, H, L, S) weights, while ours must build and
return them (the book plots them), so ours also writes B·H·L·S floats (384 MiB at the defaults). With a causal
mask torch's kernel also skips the masked half of the products; ours computes all of them and returns the full
weights, so the causal ratio cannot reach the no-mask one.

Both run with PyTorch's transparent-huge-page allocator (``THP_MEM_ALLOC_ENABLE=1``, set here before torch is
imported; pass ``--no-thp`` to turn it off): first-touch page faults on the 384 MiB weights otherwise dominate
our time (measured on the 2-core CPU: no-mask ratio 1.71 without, 1.26 with).

The last line prints the floor for any function that returns the weights: the three steps such a function
cannot skip (Q Kᵀ into a fresh (B, H, L, S) tensor, an in-place softmax over it, weights @ V), each timed
alone, summed, and divided by torch's no-mask time. Ours cannot beat that ratio without faster matrix products
than ``torch.matmul`` gives.
"""

from __future__ import annotations

import argparse
import os
import sys

# Read by torch's CPU allocator at import, so it must be set before `import torch`.
if "--no-thp" not in sys.argv:
    os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
import math
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from tformer.functional import scaled_dot_product_attention
from tformer.masks import causal_mask


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed rounds (median reported)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed rounds first")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--no-thp", action="store_true", help="huge-page allocator off (see the docstring)")
    args = parser.parse_args()

    torch.manual_seed(0)
    shape = (args.batch, args.heads, args.length, args.head_dim)
    q, k, v = (torch.randn(shape) for _ in range(3))
    mask = causal_mask(args.length)
    # The floor: the three steps any function that returns the weights must take, each timed alone.
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
    print(
        f"torch {torch.__version__}, threads={torch.get_num_threads()}, float32 CPU, "
        f"THP_MEM_ALLOC_ENABLE={os.environ.get('THP_MEM_ALLOC_ENABLE', '0')}, "
        f"B={args.batch} H={args.heads} L=S={args.length} Dh={args.head_dim}, "
        f"median of {args.repeats} interleaved rounds after {args.warmup} warm-up"
    )
    with torch.inference_mode():
        t = median_seconds(cases, args.repeats, args.warmup)
    floor = t["Q K^T"] + t["softmax"] + t["weights @ V"]
    print(f"{'case':<8}{'ours (s)':>10}{'torch (s)':>11}{'ours/torch':>12}")
    for name in ("no mask", "causal"):
        ours, ref = t[f"ours, {name}"], t[f"torch, {name}"]
        print(f"{name:<8}{ours:>10.3f}{ref:>11.3f}{ours / ref:>12.2f}")
    ref = t["torch, no mask"]
    print(f"{'floor':<8}{floor:>10.3f}{ref:>11.3f}{floor / ref:>12.2f}")


if __name__ == "__main__":
    main()
