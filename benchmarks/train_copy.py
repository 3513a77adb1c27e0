"""Train a tiny tformer Transformer on the copy task and report held-out exact match and the training time.

    .venv/bin/python benchmarks/train_copy.py            # --task reverse or sort for the other toy tasks

The test sequences never occur in training (``exclude=``). Prints exact match, steps and wall/CPU seconds of
training (evaluation excluded).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from tformer.book.environment import seed_everything
from tformer.data.tasks import copy_task, reverse_task, sort_task, task_vocab_size
from tformer.data.text import BOS_ID, EOS_ID, PairBatches, pad_sequences
from tformer.models import Transformer
from tformer.training.metrics import exact_match
from tformer.training.train import linear_warmup_decay, seq2seq_loss, train

TASKS = {"copy": copy_task, "reverse": reverse_task, "sort": sort_task}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=sorted(TASKS), default="copy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--symbols", type=int, default=10)
    p.add_argument("--min-len", type=int, default=5)
    p.add_argument("--max-len", type=int, default=10)
    p.add_argument("--train-size", type=int, default=4_000)
    p.add_argument("--test-size", type=int, default=500)
    p.add_argument("--d-model", type=int, default=32)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=250)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--warmup", type=int, default=20, help="linear warm-up steps, then linear decay to 0")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    task = TASKS[args.task]
    length = (args.min_len, args.max_len)
    train_pairs = task(args.train_size, length, num_symbols=args.symbols, seed=args.seed)
    seen = {tuple(s) for s, _ in train_pairs}
    test_pairs = task(args.test_size, length, num_symbols=args.symbols, seed=args.seed + 1, exclude=seen)
    batches = PairBatches(
        [s for s, _ in train_pairs], [t for _, t in train_pairs], args.batch_size, seed=args.seed
    )

    seed_everything(args.seed)
    V = task_vocab_size(args.symbols)
    model = Transformer(
        V, V, d_model=args.d_model, num_heads=4, num_encoder_layers=args.layers, num_decoder_layers=args.layers,
        d_ff=4 * args.d_model, dropout=0.0, max_len=64, norm_first=True,
    )  # fmt: skip
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)
    # warm up, then decay linearly to zero at the last step: the decay is what turns 97% into 99+%
    scheduler = linear_warmup_decay(optimizer, args.warmup, args.steps)
    cpu0 = time.process_time()
    history = train(
        model, batches, seq2seq_loss, optimizer=optimizer, scheduler=scheduler, max_steps=args.steps, device="cpu", seed=args.seed,
        progress=not args.no_progress, desc=args.task,
    )  # fmt: skip
    cpu_s = time.process_time() - cpu0

    model.eval()
    src = pad_sequences([[*s, EOS_ID] for s, _ in test_pairs])  # (N, S): sources end in EOS, as in training
    ys = model.greedy_decode(src, args.max_len + 2, BOS_ID, EOS_ID)  # (N, ≤ max_len + 2)
    preds = []
    for row in ys.tolist():
        preds.append([str(t) for t in (row[: row.index(EOS_ID)] if EOS_ID in row else row)])
    em = exact_match(preds, [[str(t) for t in tgt] for _, tgt in test_pairs])
    sys.stdout.write(
        f"{args.task}: held-out exact match {em:.4f} on {len(test_pairs)} sequences of length {length}; "
        f"{history.steps} steps in {history.train_time_s:.2f} s wall ({cpu_s:.2f} s CPU), "
        f"final loss {history.losses[-1]:.4f}\n"
    )
    return {
        "exact_match": em,
        "steps": history.steps,
        "train_time_s": history.train_time_s,
        "train_cpu_s": cpu_s,
    }


if __name__ == "__main__":
    main()
