"""Pre-train the encoder-only models chapter 12 fine-tunes: masked-token prediction on the HSK sentences.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pretrain_hsk_mlm.py [--seeds 0 1 2] [--budget 240]

Pre-training for long enough to help takes minutes per seed, more than chapter 12 may spend, so the weights ship
in ``tformer/book/checkpoints/hsk_mlm_seed{N}.pt`` (float16) and the chapter loads them. Each file records what
made it: the model settings, the vocabulary (``load_checkpoint`` refuses a different one), the seed, the budget
in CPU seconds of one thread, the number of steps and the loss history. The text is the Chinese of the training
and validation splits of :func:`tformer.data.hsk.split_hsk` (no labels, no test sentence); the loop is
:func:`tformer.training.mlm.pretrain_mlm`, the same function the chapter runs for its short demonstration.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from tformer.data.hsk import load_hsk, split_hsk
from tformer.data.text import Vocab
from tformer.models import EncoderOnlyTransformer
from tformer.training.mlm import pretrain_mlm
from tformer.training.train import save_checkpoint, training_clock

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tformer" / "book" / "checkpoints"
# Small enough to fine-tune 18 times in about a minute and a half (benchmarks/finetune_hsk_topics.py); the
# topics give the classifier head.
CONFIG = {"d_model": 64, "num_heads": 4, "num_layers": 2, "d_ff": 256, "max_len": 96, "dropout": 0.1,
          "norm_first": True, "num_classes": 19}  # fmt: skip


def hsk_mlm_vocab() -> Vocab:
    """``<mask>`` (id 4), then the characters and punctuation of the training split by falling frequency."""
    split = split_hsk(load_hsk().sentences)
    return Vocab(["<mask>", *Vocab.build([list(s.chinese) for s in split.train]).to_list()])


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument(
        "--budget", type=float, default=240.0, help="CPU seconds of training per seed (one thread)"
    )
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    split = split_hsk(load_hsk().sentences)
    vocab = hsk_mlm_vocab()
    text = [vocab.encode(list(s.chinese)) for s in split.train + split.validation]
    mask_id = vocab.stoi["<mask>"]
    for seed in args.seeds:
        torch.manual_seed(seed)
        model = EncoderOnlyTransformer(len(vocab), **CONFIG)
        start = time.perf_counter()
        history = pretrain_mlm(model, text, mask_id=mask_id, vocab_size=len(vocab), time_budget_s=args.budget,
                               seed=seed, clock=training_clock("cpu"), device="cpu")  # fmt: skip
        last = sum(history.losses[-100:]) / 100
        print(f"seed {seed}: {history.steps} steps, loss {history.losses[0]:.2f} -> {last:.2f} "
              f"({time.perf_counter() - start:.0f} s wall)", flush=True)  # fmt: skip
        save_checkpoint(OUT / f"hsk_mlm_seed{seed}.pt", model.half(), history=history, vocabs={"chars": vocab},
                        extra={"config": {"vocab_size": len(vocab), **CONFIG}, "seed": seed,
                               "budget_cpu_s": args.budget, "final_loss": last})  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
