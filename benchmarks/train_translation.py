"""Train a small tformer Transformer on the running-example corpus and report test exact match, BLEU and time.

    .venv/bin/python benchmarks/train_translation.py                  # the recipe: pre-norm, Xavier, linear decay
    .venv/bin/python benchmarks/train_translation.py --norm post      # the paper's post-norm, same budget
    .venv/bin/python benchmarks/train_translation.py --init torch     # PyTorch's default init instead of Xavier
    .venv/bin/python benchmarks/train_translation.py --schedule noam  # the paper's warm-up schedule (§5.3)

Recipe: d_model 64, 4 heads, 2 + 2 layers, d_ff 256, no dropout, batches of 64 drawn from length-sorted pools of
8 batches, Adam (0.9, 0.98) with 100 warm-up steps to 5e-3 and a linear decay to zero at step 1,400, one torch
thread (so the figure does not depend on how many cores are free).

Prints the exact match on the test split (overall and by source length), on the held-out-combination test set,
corpus BLEU (sacrebleu, tokenize="zh"), the training time (wall and CPU seconds, evaluation excluded), steps,
tokens/s, and the greedy translation of "the cat sat on the mat". ``--json PATH`` also writes the figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

import torch

from tformer.book.environment import seed_everything
from tformer.data.corpus import generate_corpus
from tformer.data.text import PairBatches, Vocab
from tformer.models import Transformer
from tformer.training.metrics import evaluate_translation, translate
from tformer.training.train import linear_warmup_decay, save_checkpoint, seq2seq_loss, train, warmup_schedule


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2, help="encoder layers = decoder layers")
    p.add_argument("--d-ff", type=int, default=256)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--pool", type=int, default=8, help="length bucketing: batches per sorted pool (1: none)")
    p.add_argument("--steps", type=int, default=1400)
    p.add_argument(
        "--time-budget", type=float, default=0.0, help="stop after this many seconds (0: steps only)"
    )
    p.add_argument(
        "--schedule",
        choices=["noam", "linear"],
        default="linear",
        help="noam: the paper's warm-up then 1/sqrt(step); linear: warm-up then linear decay to 0",
    )
    p.add_argument("--lr", type=float, default=5e-3, help="peak learning rate of the linear schedule")
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--lr-factor", type=float, default=1.0, help="multiplies the paper's schedule (noam)")
    p.add_argument(
        "--norm",
        choices=["pre", "post"],
        default="pre",
        help="pre-norm (default: reaches the figure in budget) or the paper's post-norm",
    )
    p.add_argument("--init", choices=["xavier", "torch"], default="xavier")
    p.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    p.add_argument("--eval-every", type=int, default=0, help="steps between validation checks (0: none)")
    p.add_argument("--label-smoothing", type=float, default=0.0)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--json", type=str, default=None)
    p.add_argument(
        "--save", type=str, default=None, help="save a checkpoint (weights, vocabularies, history)"
    )
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    corpus = generate_corpus(seed=args.seed)
    src_vocab = Vocab.build(en.split() for en, _ in corpus.train)
    tgt_vocab = Vocab.build(zh.split() for _, zh in corpus.train)
    batches = PairBatches(
        [src_vocab.encode(en.split(), strict=True) for en, _ in corpus.train],
        [tgt_vocab.encode(zh.split(), strict=True) for _, zh in corpus.train],
        args.batch_size,
        seed=args.seed,
        pool=args.pool,
    )
    seed_everything(args.seed)
    model = Transformer(
        len(src_vocab), len(tgt_vocab), d_model=args.d_model, num_heads=args.heads,
        num_encoder_layers=args.layers, num_decoder_layers=args.layers, d_ff=args.d_ff, dropout=args.dropout,
        max_len=128, norm_first=args.norm == 'pre', init=args.init,
    )  # fmt: skip
    if args.schedule == "noam":
        optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
        scheduler = warmup_schedule(optimizer, args.d_model, args.warmup, factor=args.lr_factor)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)
        scheduler = linear_warmup_decay(optimizer, args.warmup, args.steps)

    eval_cpu = [0.0]

    def evaluate(m: torch.nn.Module) -> dict[str, float]:
        c0 = time.process_time()
        r = evaluate_translation(m, corpus.validation[:500], src_vocab, tgt_vocab)
        eval_cpu[0] += time.process_time() - c0
        return {"exact_match": r.exact_match, "exact_match_over_20": r.accuracy_over(20)}

    def loss_fn(m: torch.nn.Module, batch: tuple) -> tuple:
        return seq2seq_loss(m, batch, label_smoothing=args.label_smoothing)

    cpu0 = time.process_time()
    history = train(
        model, batches, loss_fn, optimizer=optimizer, scheduler=scheduler, max_steps=args.steps,
        time_budget_s=args.time_budget or None, device="cpu", seed=args.seed, progress=not args.no_progress,
        desc="translation", evaluate=evaluate if args.eval_every else None, eval_every=args.eval_every or None,
    )  # fmt: skip

    train_cpu_s = time.process_time() - cpu0 - eval_cpu[0]
    t0 = time.perf_counter()
    report = evaluate_translation(model, corpus.test, src_vocab, tgt_vocab)
    combos = evaluate_translation(model, corpus.test_combinations, src_vocab, tgt_vocab)
    cat = translate(model, ["the cat sat on the mat"], src_vocab, tgt_vocab)[0]
    eval_s = time.perf_counter() - t0
    n_params = sum(p.numel() for p in model.parameters())
    result = {
        "config": vars(args),
        "params": n_params,
        "steps": history.steps,
        "epochs": history.epochs,
        "stop_reason": history.stop_reason,
        "train_time_s": history.train_time_s,
        "train_cpu_s": train_cpu_s,
        "tokens_per_s": history.tokens_per_s,
        "eval_steps": history.eval_steps,
        "eval_metrics": history.eval_metrics,
        "final_loss": sum(history.losses[-20:]) / len(history.losses[-20:]),
        "test_exact_match": report.exact_match,
        "test_exact_match_over_20_words": report.accuracy_over(20),
        "test_bleu": report.bleu,
        "test_by_length": {b.label: [b.accuracy, b.count] for b in report.buckets},
        "combinations_exact_match": combos.exact_match,
        "combinations_bleu": combos.bleu,
        "the_cat_sat_on_the_mat": cat,
        "eval_time_s": eval_s,
    }
    norm = f"{args.norm}-norm"
    lines = [
        f"model: d_model={args.d_model} heads={args.heads} layers={args.layers}+{args.layers} d_ff={args.d_ff} "
        f"{norm} init={args.init} params={n_params:,}",
        f"training: {history.steps} steps ({history.epochs:.2f} epochs, stopped by {history.stop_reason}) in "
        f"{history.train_time_s:.1f} s wall ({train_cpu_s:.1f} s CPU), {history.tokens_per_s:,.0f} target tokens/s, "
        f"final loss {result['final_loss']:.4f}",
        *(
            f"  step {s}: validation exact match {m['exact_match']:.4f}, over 20 words {m['exact_match_over_20']:.4f}"
            for s, m in zip(history.eval_steps, history.eval_metrics, strict=True)
        ),
        f"test exact match: {report.exact_match:.4f} ({len(report.correct)} sentences), BLEU {report.bleu:.2f}",
        "  by source length: "
        + ", ".join(f"{b.label}: {b.accuracy:.4f} (n={b.count})" for b in report.buckets),
        f"  over 20 words: {report.accuracy_over(20):.4f}",
        f"held-out combinations: exact match {combos.exact_match:.4f}, BLEU {combos.bleu:.2f}",
        f"the cat sat on the mat -> {cat}",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    if args.save:
        # the model's settings and what it scored travel with the weights (float32: at one thread the scores
        # reproduce exactly; elsewhere a near-tie may flip a sentence)
        shipped = {key: result[key] for key in ("test_exact_match", "test_bleu", "combinations_exact_match",
                                                "the_cat_sat_on_the_mat", "steps", "train_cpu_s")}  # fmt: skip
        shipped["config"] = dataclasses.asdict(model.config)  # Transformer(TransformerConfig(**config)) rebuilds it
        changed = [f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()
                   if k not in ("save", "json", "no_progress") and v != p.get_default(k)]  # the settings only
        shipped["recipe"] = " ".join(["python benchmarks/train_translation.py", *changed])
        save_checkpoint(args.save, model, history=history, vocabs={"src": src_vocab, "tgt": tgt_vocab},
                        extra=shipped)  # fmt: skip
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, ensure_ascii=False, indent=2)
    return result


if __name__ == "__main__":
    main()
