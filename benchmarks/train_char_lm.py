"""Train a character-level DecoderOnlyTransformer on Python's own English help texts; compare with a bigram.

    .venv/bin/python benchmarks/train_char_lm.py

The text is :func:`tformer.data.text.load_english_text` (``pydoc_data.topics``, cleaned; nothing is downloaded). Prints
the bigram baseline's validation cross-entropy (add-k smoothing, the best k of a small grid, so the baseline is
as strong as it can be), the model's validation cross-entropy (nats per character), the gap, the training time,
and a sample with the share of its words that occur in the training text.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

import torch

from tformer.book.environment import seed_everything
from tformer.data.text import WindowBatches, char_tokenize, load_english_text
from tformer.models import DecoderOnlyTransformer
from tformer.training.metrics import bigram_nats_per_token, lm_nats_per_token
from tformer.training.train import linear_warmup_decay, lm_loss, train


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--block", type=int, default=64, help="context length in characters")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument(
        "--time-budget", type=float, default=0.0, help="stop after this many seconds (0: steps only)"
    )
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--json", type=str, default=None)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    text = load_english_text()
    vocab = text.char_vocab()
    train_ids = torch.tensor(vocab.encode(char_tokenize(text.train)), dtype=torch.long)  # (N,)
    valid_ids = torch.tensor(vocab.encode(char_tokenize(text.validation)), dtype=torch.long)  # (N_val,)
    bigram = {
        k: bigram_nats_per_token(train_ids, valid_ids, len(vocab), k=k) for k in (0.01, 0.03, 0.1, 0.3, 1.0)
    }
    best_k = min(bigram, key=bigram.get)

    seed_everything(args.seed)
    model = DecoderOnlyTransformer(
        len(vocab), d_model=args.d_model, num_heads=args.heads, num_layers=args.layers, d_ff=4 * args.d_model,
        max_len=args.block, dropout=0.0, positional="learned", norm_first=True,  # GPT-2's pre-norm block
    )  # fmt: skip
    batches = WindowBatches(train_ids, args.block, args.batch_size, num_batches=args.steps, seed=args.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    scheduler = linear_warmup_decay(optimizer, args.warmup, args.steps)
    cpu0 = time.process_time()
    history = train(
        model, batches, lm_loss, optimizer=optimizer, scheduler=scheduler, max_steps=args.steps,
        time_budget_s=args.time_budget or None, device="cpu", seed=args.seed, progress=not args.no_progress,
        desc="char LM",
    )  # fmt: skip
    cpu_s = time.process_time() - cpu0
    valid_nats = lm_nats_per_token(model, valid_ids, args.block)

    model.eval()
    gen = torch.Generator().manual_seed(args.seed)
    sample_ids = torch.tensor([vocab.encode(char_tokenize("The "))])  # (1, 4)
    while (
        sample_ids.shape[1] < 300
    ):  # learned positions exist only up to the block: slide a half-block window
        context = sample_ids[:, -(args.block // 2) :]  # (1, ≤ block/2)
        new = model.generate(context, args.block - context.shape[1], temperature=0.8, generator=gen)
        sample_ids = torch.cat([sample_ids, new[:, context.shape[1] :]], dim=1)  # (1, grows)
    sample = "".join(vocab.decode(sample_ids[0]))
    train_words = set(re.findall(r"[a-z]+", text.train.lower()))
    words = re.findall(r"[a-z]+", sample.lower())
    known = sum(w in train_words for w in words) / max(len(words), 1)

    result = {
        "config": vars(args),
        "params": sum(p.numel() for p in model.parameters()),
        "vocab_size": len(vocab),
        "train_chars": len(text.train),
        "valid_chars": len(text.validation),
        "bigram_nats": bigram[best_k],
        "bigram_k": best_k,
        "valid_nats": valid_nats,
        "gap_nats": bigram[best_k] - valid_nats,
        "steps": history.steps,
        "train_time_s": history.train_time_s,
        "train_cpu_s": cpu_s,
        "final_train_loss": sum(history.losses[-20:]) / len(history.losses[-20:]),
        "sample": sample,
        "sample_known_word_share": known,
    }
    sys.stdout.write(
        f"text: {len(text.train):,} train / {len(text.validation):,} validation characters, vocabulary {len(vocab)}\n"
        f"model: d_model={args.d_model} heads={args.heads} layers={args.layers} block={args.block} "
        f"params={result['params']:,}\n"
        f"training: {history.steps} steps in {history.train_time_s:.1f} s wall ({cpu_s:.1f} s CPU), "
        f"{history.tokens_per_s:,.0f} characters/s\n"
        f"bigram baseline (add-k, k={best_k}): {bigram[best_k]:.4f} nats/char on validation\n"
        f"transformer: {valid_nats:.4f} nats/char on validation; better by {result['gap_nats']:.4f}\n"
        f"sample (temperature 0.8): {sample!r}\n"
        f"words of the sample found in the training text: {known:.0%}\n"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, ensure_ascii=False, indent=2)
    return result


if __name__ == "__main__":
    main()
