"""Chapter 12's fine-tuning grid: pre-trained encoder against the same model from scratch, three label shares.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/finetune_hsk_topics.py            # print the grid
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/finetune_hsk_topics.py --json tformer/book/benchmarks/hsk_finetune.json

For every seed s in 0, 1, 2 and every share of the training labels in :data:`tformer.book.topics.FRACTIONS`, two
runs of :func:`tformer.book.topics.fine_tune_model`: one starting from the shipped encoder pre-trained with seed s
(``tformer/book/checkpoints/hsk_mlm_seed{s}.pt``, made by ``benchmarks/pretrain_hsk_mlm.py``), one from random
weights (the control). 18 runs of 150 steps, 35 to 100 seconds of one CPU thread, by machine; the chapter runs one pair
again (seed 2, a fifth of the labels) and checks it against the stored numbers. The record holds the settings,
the accuracies, which test sentences each run got right (for a paired comparison of the arms), torch's version
and the CPU seconds the grid took.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from importlib import resources
from pathlib import Path

import torch

from tformer.book.topics import (
    BATCH,
    FINETUNE_STEPS,
    FRACTIONS,
    LR,
    WEIGHT_DECAY,
    fine_tune_model,
    topic_accuracy,
    topic_correct,
    topic_data,
)
from tformer.models import EncoderOnlyTransformer
from tformer.training.train import load_checkpoint

SEEDS = (0, 1, 2)


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", type=Path, help="write the record here")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    data = topic_data()
    checkpoints = resources.files("tformer.book.checkpoints")
    start = time.process_time()
    accuracy: dict[str, dict[str, list[float]]] = {"pre-trained": {}, "scratch": {}}
    correct: dict[str, dict[str, list[str]]] = {"pre-trained": {}, "scratch": {}}  # "0"/"1" per test sentence
    config = None
    for seed in SEEDS:
        path = checkpoints / f"hsk_mlm_seed{seed}.pt"
        config = torch.load(path, weights_only=True)["extra"]["config"]
        encoder = EncoderOnlyTransformer(**config)
        load_checkpoint(path, encoder, vocabs={"chars": data.vocab})
        for fraction in FRACTIONS:
            for arm, begin in (("pre-trained", encoder), ("scratch", None)):
                right = topic_correct(fine_tune_model(begin, config, data, fraction, seed), data)
                acc = topic_accuracy(right)
                accuracy[arm].setdefault(str(fraction), []).append(acc)
                correct[arm].setdefault(str(fraction), []).append("".join("1" if r else "0" for r in right.tolist()))
                print(f"seed {seed}, {fraction:>4} of the labels, {arm:>11}: {acc:.2f}%", flush=True)
    record = {
        "what": "topic accuracy (%) on the HSK test split after fine-tuning, per seed (index = seed)",
        "seeds": list(SEEDS), "fractions": [str(f) for f in FRACTIONS], "steps": FINETUNE_STEPS, "batch": BATCH,
        "lr": LR, "weight_decay": WEIGHT_DECAY, "config": config, "test_sentences": len(data.x_test),
        "train_sentences": len(data.x_train), "accuracy": accuracy, "correct": correct, "torch": torch.__version__,
        "cpu_s": round(time.process_time() - start, 1),
    }
    print(f"{record['cpu_s']} CPU s")
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main(sys.argv[1:])
