"""Chapter 17's small GPT against nanoGPT's CPU recipe, on the same poems for the same CPU seconds of one thread.

    .venv/bin/python benchmarks/gpt_vs_nanogpt.py                      # 3 seeds, 150 s each, both models
    .venv/bin/python benchmarks/gpt_vs_nanogpt.py --budget 30 --seeds 0 # a quick look
    .venv/bin/python benchmarks/gpt_vs_nanogpt.py --json tformer/book/benchmarks/gpt_vs_nanogpt.json

The anchor is the CPU command of nanoGPT's README (Karpathy 2023) for its character-level Shakespeare config:
4 layers, 4 heads, width 128, context 64, batch 12, no dropout, AdamW (lr 1e-3, betas 0.9 / 0.99, weight decay
0.1 on matrices only), 100 warm-up iterations, cosine decay to 1e-4, gradient norm clipped to 1, learned
positions, pre-LayerNorm without biases, GELU, input and output embeddings tied, N(0, 0.02) init. It is written
here with ``torch.nn`` (not copied) as :class:`RecipeGPT`. Its cosine runs over the iterations that fit the
budget (the README's 2,000 would take about 10 minutes of one thread here), so both runs end their schedule.

The chapter's model is :func:`tformer.book.poet.train_poet`. Both read the same character vocabulary, draw
random 64-character windows of the training poems, stop after the same CPU seconds (``time.process_time``,
one torch thread, evaluation excluded) and are scored by :func:`tformer.book.poet.validation_loss` on every
64-character window of the held-out poems. Each seed's two runs go side by side, one per core, so a slow spell
of the machine falls on both. A run's ``cpu_s`` is its training seconds: for the recipe, from building the model
to the end of its loop (about 2 s more than the loop, which stops at the budget); for the chapter's model,
``History.train_time_s``.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from tformer.book.poet import CONTEXT, PoemData, poem_data, train_poet, validation_loss
from tformer.environment import seed_everything

RECIPE = {"layers": 4, "heads": 4, "width": 128, "batch": 12, "lr": 1e-3, "min_lr": 1e-4, "warmup": 100,
          "weight_decay": 0.1, "betas": (0.9, 0.99)}


class RecipeBlock(nn.Module):
    """Pre-LayerNorm block: causal self-attention, then a 4× GELU MLP; no biases."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width, bias=False), nn.LayerNorm(width, bias=False)
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.proj = nn.Linear(width, width, bias=False)
        self.up, self.down = nn.Linear(width, 4 * width, bias=False), nn.Linear(4 * width, width, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        B, L, D = x.shape
        q, k, v = (t.view(B, L, self.heads, D // self.heads).transpose(1, 2) for t in self.qkv(self.norm1(x)).split(D, -1))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, L, Dh)
        x = x + self.proj(attended.transpose(1, 2).reshape(B, L, D))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class RecipeGPT(nn.Module):
    """nanoGPT's architecture at the CPU recipe's size: ``tokens (B, L) -> logits (B, L, V)``."""

    def __init__(self, vocab_size: int, width: int = 128, heads: int = 4, layers: int = 4) -> None:
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab_size, width), nn.Embedding(CONTEXT, width)
        self.blocks = nn.ModuleList(RecipeBlock(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width, bias=False)
        self.head = nn.Linear(width, vocab_size, bias=False)
        self.head.weight = self.tokens.weight  # tied
        for name, p in self.named_parameters():
            if p.dim() > 1:  # residual outputs scaled down by depth, as GPT-2
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj.weight", "down.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, tokens: Tensor) -> Tensor:
        x = self.tokens(tokens) + self.positions(torch.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def train_recipe(data: PoemData, seed: int, budget_s: float) -> tuple[nn.Module, int]:
    """The recipe's loop for ``budget_s`` CPU seconds; returns the model and its step count."""
    seed_everything(seed)
    model = RecipeGPT(len(data.vocab))
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    others = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": matrices, "weight_decay": RECIPE["weight_decay"]},
                                   {"params": others, "weight_decay": 0.0}], lr=RECIPE["lr"], betas=RECIPE["betas"])
    generator = torch.Generator().manual_seed(seed)
    start, steps = time.process_time(), 0
    while (spent := time.process_time() - start) < budget_s:
        if steps < RECIPE["warmup"]:
            lr = RECIPE["lr"] * (steps + 1) / RECIPE["warmup"]
        else:  # cosine from lr to min_lr over the rest of the budget
            lr = RECIPE["min_lr"] + (RECIPE["lr"] - RECIPE["min_lr"]) * 0.5 * (1 + math.cos(math.pi * spent / budget_s))
        for group in optimizer.param_groups:
            group["lr"] = lr
        starts = torch.randint(0, data.train.numel() - CONTEXT, (RECIPE["batch"],), generator=generator)
        index = starts[:, None] + torch.arange(CONTEXT)  # (B, L)
        logits = model(data.train[index])
        loss = F.cross_entropy(logits.flatten(0, 1), data.train[index + 1].flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        steps += 1
    return model.eval(), steps


def one_run(model: str, seed: int, budget_s: float) -> dict:
    torch.set_num_threads(1)
    data = poem_data()
    if model == "recipe":
        start = time.process_time()
        net, steps = train_recipe(data, seed, budget_s)
        train_s = time.process_time() - start
    else:
        net, history = train_poet(data, seed=seed, budget_s=budget_s, progress=False)
        steps, train_s = history.steps, history.train_time_s  # evaluation excluded, as above
    loss = validation_loss(net, data.validation)
    params = sum(p.numel() for p in net.parameters())
    return {"model": model, "seed": seed, "steps": steps, "cpu_s": round(train_s, 1), "parameters": params,
            "val_nats": loss, "val_bits": loss / math.log(2)}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget", type=float, default=150.0, help="CPU seconds of training per run")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--one", nargs=2, metavar=("MODEL", "SEED"), help=argparse.SUPPRESS)  # a worker process
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(one_run(args.one[0], int(args.one[1]), args.budget)))
        return {}
    runs = []
    for seed in args.seeds:  # the two models of a seed side by side, one process (and core) each
        workers = [subprocess.Popen([sys.executable, __file__, "--budget", str(args.budget), "--one", model, str(seed)],
                                    stdout=subprocess.PIPE, text=True) for model in ("recipe", "poet")]
        for worker in workers:
            out, _ = worker.communicate()
            if worker.returncode:
                raise SystemExit(f"a run failed (exit {worker.returncode})")
            runs.append(json.loads(out.strip().splitlines()[-1]))
            r = runs[-1]
            print(f"seed {r['seed']}  {r['model']:6}  {r['steps']:5d} steps  {r['cpu_s']:6.1f} CPU s  "
                  f"{r['parameters']:,} parameters  validation {r['val_nats']:.3f} nats = {r['val_bits']:.3f} bits "
                  "per character", flush=True)
    result = {"budget_cpu_s": args.budget, "threads": 1, "runs": runs,
              "poet_lower_on_every_seed": all(
                  next(r for r in runs if r["seed"] == s and r["model"] == "poet")["val_nats"]
                  < next(r for r in runs if r["seed"] == s and r["model"] == "recipe")["val_nats"] for s in args.seeds)}
    print("the chapter's model lower on every seed:", result["poet_lower_on_every_seed"])
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return result


if __name__ == "__main__":
    main()
