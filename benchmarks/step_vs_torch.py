"""Training-step time of the book-size encoder-decoder against ``torch.nn.Transformer`` (a script, not a test).

    python benchmarks/step_vs_torch.py [--rounds N] [--steps K] [--before DIR]

The model of chapter 10: D = 64, 2 + 2 layers, H = 4, F = 256, pre-norm (each stack ends in a LayerNorm),
dropout 0, batch 64, source length S = 22, target length L = 20, float32, CPU, one torch thread. Both sides get
the same embeddings (× √D plus the sinusoidal table), the same masks (causal, and source and target padding
built from the tokens at every step), the same output layer, the same loss (cross-entropy, padding ignored) and
the same optimiser step (Adam). ``torch.nn.Transformer`` is built with ``norm_first=True`` and keeps its two final
LayerNorms, which ours has too when ``norm_first``; its bool masks use the opposite polarity (True = blocked), so
they are inverted at that boundary.

Printed, from rounds that call every case in turn (ours, torch, before, ours, ...) so that a change in the
machine's load falls on all of them alike, the median CPU seconds (``time.process_time``: one thread, and other
programs on a shared machine inflate it far less than the wall clock) of

- one training step (forward, loss, backward, ``Adam.step``): ours, torch, and ours/torch;
- one eager forward pass in training mode (autograd on): ours now and ours before the change, and their ratio.

``--what-if`` adds two training steps that are not the package's, to ask how far a speed path could go: ours with
every attention computed by torch's fused kernel (``F.scaled_dot_product_attention``, no weights returned), and
that plus Q, K and V (or K and V from the memory) projected by one matrix product of the concatenated weights, as
``nn.MultiheadAttention`` packs them. Both patch the package for their own calls only.

"before" is the package as it was at the git revision ``--before-rev`` (default ``main``), checked out with
``git worktree add /tmp/tformer_before main`` (or ``--before DIR``) and imported from there under another name
in the same process, so its numbers come from the same rounds. Without such a checkout the "before" lines are
skipped.
"""

from __future__ import annotations

import argparse
import importlib
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch
import torch.nn.functional as F
from torch import Tensor, nn

SIZES = dict(d_model=64, num_heads=4, num_encoder_layers=2, num_decoder_layers=2, d_ff=256, dropout=0.0,
             max_len=128, norm_first=True)  # fmt: skip
BATCH, S, L, V, PAD = 64, 22, 20, 100, 0


def import_before(directory: Path) -> ModuleType | None:
    """Import the package found in ``directory`` and keep it apart from the current one; ``None`` if absent."""
    if not (directory / "tformer" / "__init__.py").exists():
        return None
    current = {k: v for k, v in sys.modules.items() if k == "tformer" or k.startswith("tformer.")}
    for k in current:
        del sys.modules[k]
    sys.path.insert(0, str(directory))
    try:
        old = importlib.import_module("tformer.models")
    finally:
        sys.path.remove(str(directory))
        for k in [k for k in sys.modules if k == "tformer" or k.startswith("tformer.")]:
            sys.modules["before_" + k] = sys.modules.pop(k)  # old modules keep their references
        sys.modules.update(current)
    return old


class TorchSeq2Seq(nn.Module):
    """``nn.Transformer`` with our embeddings (× √D, sinusoidal positions) and output layer around it."""

    def __init__(self, d_model: int, num_heads: int, num_encoder_layers: int, num_decoder_layers: int,
                 d_ff: int, dropout: float, max_len: int, norm_first: bool) -> None:  # fmt: skip
        super().__init__()
        self.d_model = d_model
        self.src_embed = nn.Embedding(V, d_model)
        self.tgt_embed = nn.Embedding(V, d_model)
        position = torch.arange(max_len)[:, None]  # (max_len, 1)
        freq = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))  # (D/2,)
        table = torch.zeros(max_len, d_model)
        table[:, 0::2], table[:, 1::2] = torch.sin(position * freq), torch.cos(position * freq)
        self.register_buffer("table", table, persistent=False)
        self.dropout = nn.Dropout(dropout)
        self.core = nn.Transformer(d_model, num_heads, num_encoder_layers, num_decoder_layers, d_ff, dropout,
                                   batch_first=True, norm_first=norm_first)  # fmt: skip
        self.output = nn.Linear(d_model, V)

    def embed(self, embedding: nn.Embedding, tokens: Tensor) -> Tensor:
        x = embedding(tokens) * math.sqrt(self.d_model) + self.table[: tokens.shape[1]]  # (B, L, D)
        return self.dropout(x)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        n = tgt_in.shape[1]
        blocked_future = torch.ones(n, n, dtype=torch.bool).triu(1)  # (L, L), True = may NOT attend (torch)
        y = self.core(self.embed(self.src_embed, src), self.embed(self.tgt_embed, tgt_in), tgt_mask=blocked_future,
                      src_key_padding_mask=src == PAD, tgt_key_padding_mask=tgt_in == PAD,
                      memory_key_padding_mask=src == PAD)  # fmt: skip
        return self.output(y)  # (B, L, V)


def batch(generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
    """Right-padded source (B, S), decoder input (B, L) and target (B, L), lengths drawn per row."""
    def padded(n: int) -> Tensor:
        tokens = torch.randint(3, V, (BATCH, n), generator=generator)
        lengths = torch.randint(n // 2, n + 1, (BATCH,), generator=generator)
        return tokens.masked_fill(torch.arange(n)[None, :] >= lengths[:, None], PAD)

    src, tgt = padded(S), padded(L + 1)
    tgt[:, 0] = 1  # BOS
    return src, tgt[:, :-1], tgt[:, 1:]


def step_fn(model: nn.Module, data: tuple[Tensor, Tensor, Tensor]) -> Callable[[], None]:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    src, tgt_in, tgt_out = data

    def step() -> None:
        logits = model(src, tgt_in)  # (B, L, V)
        loss = F.cross_entropy(logits.reshape(-1, V), tgt_out.reshape(-1), ignore_index=PAD)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def what_if_fn(model: nn.Module, data: tuple[Tensor, Tensor, Tensor], packed: bool) -> Callable[[], None]:
    """A training step of ``model`` with torch's fused attention kernel (and, if ``packed``, one projection matmul)."""
    import tformer.attention as attention
    from tformer.masks import as_heads_mask

    step = step_fn(model, data)

    def fused(self, query, key, value, mask=None, **_):  # type: ignore[no-untyped-def]  # training: no cache, no RoPE
        d = self.d_model
        if packed and query is key:
            w = torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight])
            q, k, v = F.linear(query, w, torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias])).split(d, dim=-1)
        elif packed:
            q = self.w_q(query)
            w, b = torch.cat([self.w_k.weight, self.w_v.weight]), torch.cat([self.w_k.bias, self.w_v.bias])
            k, v = F.linear(key, w, b).split(d, dim=-1)
        else:
            q, k, v = self.w_q(query), self.w_k(key), self.w_v(value)
        q, k, v = (attention.split_heads(t, self.num_heads) for t in (q, k, v))  # (B, H, L or S, Dh)
        heads_mask = None if mask is None else as_heads_mask(mask)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=heads_mask)  # dropout is 0 here
        return self.w_o(attention.merge_heads(out)), None

    def patched() -> None:
        original = attention.MultiHeadAttention.forward
        attention.MultiHeadAttention.forward = fused  # type: ignore[method-assign]
        try:
            step()
        finally:
            attention.MultiHeadAttention.forward = original  # type: ignore[method-assign]

    return patched


def forward_fn(model: nn.Module, data: tuple[Tensor, Tensor, Tensor]) -> Callable[[], None]:
    src, tgt_in, _ = data
    return lambda: model(src, tgt_in)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=5, help="calls timed together per case and round")
    parser.add_argument("--before", type=Path, default=Path("/tmp/tformer_before"))
    parser.add_argument("--what-if", action="store_true", help="also time two speed paths the package does not take")
    args = parser.parse_args()
    torch.set_num_threads(1)
    before = import_before(args.before)
    from tformer.models import Transformer

    torch.manual_seed(0)
    data = batch(torch.Generator().manual_seed(0))
    ours = Transformer(V, V, pad_id=PAD, **SIZES).train()
    theirs = TorchSeq2Seq(**SIZES).train()
    cases: dict[str, Callable[[], None]] = {"step ours": step_fn(ours, data), "step torch": step_fn(theirs, data),
                                            "forward ours": forward_fn(ours, data)}  # fmt: skip
    if args.what_if:
        for name, packed in (("step fused", False), ("step fused+pack", True)):
            twin = Transformer(V, V, pad_id=PAD, **SIZES).train()
            twin.load_state_dict(ours.state_dict())
            cases[name] = what_if_fn(twin, data, packed)
    if before is not None:
        old = before.Transformer(V, V, pad_id=PAD, **SIZES).train()
        old.load_state_dict(ours.state_dict())
        with torch.no_grad():
            torch.testing.assert_close(old(*data[:2]), ours(*data[:2]), rtol=0, atol=0)  # the same numbers
        cases["forward before"] = forward_fn(old, data)
        cases["step before"] = step_fn(old, data)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(2):  # warm-up rounds
        for fn in cases.values():
            fn()
    for _ in range(args.rounds):
        for name, fn in cases.items():
            fn()  # untimed: the timed calls find the caches as this case leaves them
            start = time.process_time()
            for _ in range(args.steps):
                fn()
            times[name].append((time.process_time() - start) / args.steps)
    med = {name: statistics.median(t) * 1e3 for name, t in times.items()}
    print(f"torch {torch.__version__}, 1 thread, {args.rounds} rounds x {args.steps} calls, CPU ms per call (median)")
    for name, ms in med.items():
        spread = f"{min(times[name]) * 1e3:.2f}-{max(times[name]) * 1e3:.2f}"
        print(f"  {name:15s} {ms:7.2f} ms  (range {spread})")
    print(f"training step ours/torch: {med['step ours'] / med['step torch']:.3f}  (target <= 0.80)")
    for name in ("step fused", "step fused+pack"):
        if name in med:
            print(f"what if, {name[5:]}: {med[name] / med['step torch']:.3f} of torch's step")
    if before is not None:
        print(f"training step before/torch: {med['step before'] / med['step torch']:.3f}")
        print(f"eager forward ours/before: {med['forward ours'] / med['forward before']:.3f}")


if __name__ == "__main__":
    main()
