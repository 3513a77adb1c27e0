"""Read Chinese aloud: an encoder-only tagger predicts each character's pinyin on the real HSK sentences.

    .venv/bin/python benchmarks/train_pinyin.py --seeds 0 1 --budget 120     # add --help for the options

The data is :func:`tformer.data.hsk.load_hsk` split by :func:`tformer.data.hsk.split_hsk` (3,467 train, 400
validation, 400 test sentences). The model is :class:`tformer.models.EncoderOnlyTransformer` (every character
sees the whole sentence) with one linear layer from its contextual vectors to the pinyin syllables: one output per
character, which is what a tagger needs and what the BERT-style family gives. Reported on the test split, with
:func:`tformer.data.hsk.score_readings`: accuracy overall, on polyphones (characters with more than one reading in
training) and the most-frequent-reading baseline.

Options measured here (see the issue 15 notes): ``--words`` puts a separator token between the corpus's words (its
gold segmentation), ``--punct`` keeps punctuation as input tokens, ``--candidates`` lets a character seen in
training take only the readings it had there (a lexicon constraint, applied to the loss and the prediction).
Training runs under a wall-clock budget with a learning rate that warms up, then falls linearly to 0 at the end of
the budget (by elapsed time, so a slower machine takes fewer steps but still ends at 0).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch
from torch import Tensor, nn

from tformer.book.environment import seed_everything
from tformer.data.hsk import HskSentence, is_han, load_hsk, most_frequent_readings, score_readings, split_hsk
from tformer.data.text import PAD_ID, UNK_ID, Vocab, pad_sequences
from tformer.models import EncoderOnlyTransformer

SEP = "␣"  # the word separator token (not a character of the corpus)


class Tagger(nn.Module):
    """EncoderOnlyTransformer body + a linear layer to V_out tags: ``tokens (B, L) -> logits (B, L, V_out)``."""

    def __init__(self, vocab_size: int, num_tags: int, args: argparse.Namespace) -> None:
        super().__init__()
        self.encoder = EncoderOnlyTransformer(
            vocab_size, args.d_model, args.heads, args.layers, args.d_ff, max_len=64, dropout=args.dropout,
            positional=args.positional, norm_first=args.pre_norm,
        )  # fmt: skip
        self.head = nn.Linear(args.d_model, num_tags)

    def forward(self, tokens: Tensor) -> Tensor:
        return self.head(self.encoder.encode(tokens))  # (B, L, V_out)


def tokens_of(sentence: HskSentence, words: bool, punct: bool) -> tuple[list[str], list[int]]:
    """Input tokens and, per token, the index of its syllable (-1 for separators and punctuation)."""
    tokens, where, k = [], [], 0
    if words:
        for i, w in enumerate(sentence.words):
            if i:
                tokens.append(SEP)
                where.append(-1)
            for c in w:
                tokens.append(c)
                where.append(k)
                k += 1
        return tokens, where
    for c in sentence.chinese if punct else sentence.characters:
        han = is_han(c)
        tokens.append(c)
        where.append(k if han else -1)
        k += han
    return tokens, where


def encode(sentences, char_vocab: Vocab, tag_vocab: Vocab, args) -> tuple[list[list[int]], list[list[int]]]:
    xs, ys = [], []
    for s in sentences:
        tokens, where = tokens_of(s, args.words, args.punct)
        xs.append(char_vocab.encode(tokens))
        ys.append([PAD_ID if k < 0 else tag_vocab.stoi.get(s.pinyin[k], UNK_ID) for k in where])
    return xs, ys


def run(seed: int, args: argparse.Namespace) -> dict:
    split = split_hsk(load_hsk().sentences)
    train_s = split.train + (split.validation if args.use_validation else ())
    char_vocab = Vocab.build([tokens_of(s, args.words, args.punct)[0] for s in train_s])
    tag_vocab = Vocab.build([s.pinyin for s in train_s])
    x_train, y_train = encode(train_s, char_vocab, tag_vocab, args)
    x_test, y_test = encode(split.test, char_vocab, tag_vocab, args)

    counts = torch.zeros(len(char_vocab), len(tag_vocab))  # (V_in, V_out) reading counts in training
    for xs, ys in zip(x_train, y_train, strict=True):
        for x, y in zip(xs, ys, strict=True):
            if y != PAD_ID:
                counts[x, y] += 1
    counts[UNK_ID, 4:] += 1  # an unseen character may take any reading
    allowed = counts > 0 if args.candidates else torch.ones_like(counts, dtype=torch.bool)
    # the lexicon as a prior: log p(reading | character), add-0.1 smoothed over the allowed readings
    prior = ((counts + 0.1) / (counts + 0.1).sum(1, keepdim=True)).log()

    seed_everything(seed)
    model = Tagger(len(char_vocab), len(tag_vocab), args)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=args.weight_decay)
    gen = torch.Generator().manual_seed(seed)
    n = len(x_train)

    def logits_of(x: Tensor) -> Tensor:
        logits = model(x)  # (B, L, V_out)
        if args.prior:
            logits = logits + args.prior * prior[x]
        return logits.masked_fill(~allowed[x], float("-inf")) if args.candidates else logits

    steps, start = 0, time.perf_counter()
    model.train()
    while (elapsed := time.perf_counter() - start) < args.budget:
        frac = elapsed / args.budget
        scale = min(1.0, frac / args.warmup) if args.warmup > 0 else 1.0
        for g in opt.param_groups:
            g["lr"] = args.lr * scale * (1 - frac)
        idx = torch.randint(0, n, (args.batch_size,), generator=gen).tolist()
        x = pad_sequences([x_train[i] for i in idx])  # (B, L)
        y = pad_sequences([y_train[i] for i in idx])  # (B, L)
        if args.char_dropout > 0:  # replace some input characters by <unk>: practice for unseen ones
            drop = (torch.rand(x.shape, generator=gen) < args.char_dropout) & (y != PAD_ID)
            x = x.masked_fill(drop, UNK_ID)
        logits = logits_of(x)
        loss = nn.functional.cross_entropy(
            logits.flatten(0, 1), y.flatten(), ignore_index=PAD_ID, label_smoothing=args.label_smoothing
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        steps += 1
    train_s_elapsed = time.perf_counter() - start

    model.eval()
    preds = []
    with torch.no_grad():
        for i in range(0, len(x_test), 256):
            x = pad_sequences(x_test[i : i + 256])
            out = logits_of(x).argmax(-1)  # (B, L)
            for row, ys in zip(out.tolist(), y_test[i : i + 256], strict=True):
                preds.append([tag_vocab.itos[p] for p, y in zip(row, ys, strict=False) if y != PAD_ID])
    # PAD targets mark separators/punctuation; an unseen reading's target is UNK (never predicted: wrong)
    scores = score_readings(preds, split.test, train_s)
    base = score_readings(most_frequent_readings(train_s, split.test), split.test, train_s)
    return {"seed": seed, "steps": steps, "train_s": round(train_s_elapsed, 1), "accuracy": scores.accuracy,
            "polyphone_accuracy": scores.polyphone_accuracy, "baseline_accuracy": base.accuracy,
            "baseline_polyphone_accuracy": base.polyphone_accuracy, "unseen_share": scores.unseen_share}  # fmt: skip


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--budget", type=float, default=120.0, help="seconds of training per seed")
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--d-ff", type=int, default=512)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--char-dropout", type=float, default=0.0)
    p.add_argument("--label-smoothing", type=float, default=0.0)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--positional", choices=["learned", "sinusoidal", "rope"], default="learned")
    p.add_argument("--pre-norm", action="store_true")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=float, default=0.05, help="fraction of the budget spent warming up")
    p.add_argument("--words", action="store_true", help="separator tokens between the corpus's words")
    p.add_argument("--punct", action="store_true", help="keep punctuation as input tokens")
    p.add_argument("--candidates", action="store_true", help="seen characters take only readings seen in training")
    p.add_argument("--prior", type=float, default=0.0, help="weight of the log reading frequencies added to the logits")
    p.add_argument("--use-validation", action="store_true", help="train on train + validation")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = []
    for seed in args.seeds:
        row = run(seed, args)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
