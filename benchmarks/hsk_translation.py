"""English → Chinese on the HSK sentences: a word-level baseline and the paper's training tricks, one at a time.

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD .venv/bin/python benchmarks/hsk_translation.py
    ... --budget 3 --out /tmp/quick.json          # a quick end-to-end check (3 CPU seconds per run)
    ... --arms bpe tied --long-budget 0 --update  # rerun two arms, keep the others' runs in the file

Chapter 11, §7 (a collapsed block), reads the JSON this writes (``tformer/book/benchmarks/hsk_translation.json``); training 21
translators takes about twenty minutes of one CPU thread, more than the chapter may spend, so the numbers ship.

**Data.** :func:`tformer.data.hsk.split_hsk` of :func:`tformer.data.hsk.load_hsk` (placeholders and repeats
dropped): the training split trains, the validation split chooses (early stopping, checkpoint averaging, the
curves), the test split is reported. English is lower-cased.

**Arms** (3 seeds each, the same measured training budget each: CPU seconds of one torch thread,
:func:`tformer.training.train.training_clock`, evaluation excluded):

- ``baseline``: English words (punctuation split off) → Chinese characters (punctuation kept); the book's
  :class:`tformer.models.Transformer` (pre-norm, D 64, 4 heads, 2 + 2 layers, F 256;
  a quick check at 45 s gave D 64 at a peak learning rate of 3e-3 more than twice the validation BLEU of D 128
  at 1e-3 or 2e-3: 338 steps against 173), no dropout, no label
  smoothing, untied embeddings, Adam (0.9, 0.98) with a linear warm-up over the first 5% of the budget to the
  peak learning rate and a linear decay to zero at the budget's end.
- each trick added alone to the baseline: ``bpe`` (one sentencepiece BPE vocabulary shared by both languages,
  trained on the training split, without NFKC normalisation so that it writes the references' full-width
  punctuation), ``smoothing`` (label smoothing 0.1, Vaswani et al. 2017 §5.4), ``dropout``
  (0.1, §5.4), ``tied`` (``bpe`` plus one matrix for both embeddings and the output layer, §3.4; its control is
  ``bpe``), ``noam`` (the paper's schedule, §5.3, Eq. 3: the same warm-up steps and peak, then 1/√step instead
  of a linear decay to zero);
- ``averaged`` and ``early_stop``: no training of their own, from the baseline runs' saved evaluations: the
  mean of the weights of the last ``--average`` evaluations, and the evaluation with the best validation BLEU;
- ``rnn``: chapter 02's GRU encoder-decoder with Bahdanau attention, the baseline's vocabularies and schedule.

BLEU: sacrebleu's corpus BLEU with ``tokenize="zh"`` (each Chinese character a token) against the corpus's
Chinese sentences; greedy decoding.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import platform
import re
import sys
import time
from pathlib import Path

import sacrebleu
import torch

from tformer.baselines.seq2seq_rnn import Seq2SeqRNN
from tformer.book.environment import seed_everything
from tformer.data.hsk import load_hsk, split_hsk
from tformer.data.subword import SubwordTokenizer
from tformer.data.text import BOS_ID, EOS_ID, PAD_ID, PairBatches, Vocab, pad_sequences
from tformer.models import Transformer
from tformer.training.metrics import translate
from tformer.training.teacher_forcing import sequence_cross_entropy, shift_right
from tformer.training.train import seq2seq_loss, train, training_clock, warmup_schedule

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tformer" / "book" / "benchmarks" / "hsk_translation.json"
ARMS = ("baseline", "bpe", "smoothing", "dropout", "tied", "noam", "rnn")
MODEL = {"d_model": 64, "num_heads": 4, "num_encoder_layers": 2, "num_decoder_layers": 2, "d_ff": 256,
         "max_len": 128, "norm_first": True}  # fmt: skip
RNN = {"emb_dim": 64, "hidden_size": 128, "cell": "gru", "attention": "bahdanau"}
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]")


def english_words(text: str) -> list[str]:
    """Lower-cased words with punctuation split off: ``"Don't go!"`` → ``["don't", "go", "!"]``."""
    return _WORD.findall(text.lower())


class Side:
    """How one arm turns text into tokens and back: words/characters, or shared BPE pieces."""

    def __init__(self, split, bpe_size: int | None) -> None:
        self.bpe = None
        if bpe_size is None:
            self.src_vocab = Vocab.build(english_words(s.english) for s in split.train)
            self.tgt_vocab = Vocab.build(list(s.chinese) for s in split.train)
        else:
            text = [s.english.lower() for s in split.train] + [s.chinese for s in split.train]
            # identity: keep the full-width ，and ？ the references use (NFKC, the default, makes them ASCII)
            self.bpe = SubwordTokenizer.train(text, bpe_size, normalization="identity")
            self.src_vocab = self.tgt_vocab = self.bpe.vocab()

    def source(self, english: str) -> list[str]:
        return self.bpe.encode(english.lower()) if self.bpe else english_words(english)

    def target(self, chinese: str) -> list[str]:
        return self.bpe.encode(chinese) if self.bpe else list(chinese)

    def detok(self, tokens: str) -> str:
        """A decoded hypothesis (space-separated tokens) → Chinese text."""
        return self.bpe.decode(tokens.split()).strip() if self.bpe else "".join(tokens.split())


def bleu(hyps: list[str], refs: list[str]) -> sacrebleu.metrics.bleu.BLEUScore:
    return sacrebleu.BLEU(tokenize="zh").corpus_score(hyps, [refs])


def build(arm: str, side: Side, seed: int) -> torch.nn.Module:
    seed_everything(seed)
    if arm == "rnn":
        return Seq2SeqRNN(len(side.src_vocab), len(side.tgt_vocab), pad_id=PAD_ID, **RNN)
    return Transformer(len(side.src_vocab), len(side.tgt_vocab), **MODEL, dropout=0.1 if arm == "dropout" else 0.0,
                       share_embeddings=arm == "tied", tie_embeddings=arm == "tied")  # fmt: skip


class TimeLinear:
    """Linear warm-up over the first ``warmup`` share of the training budget, then linear decay to 0 at its end.

    Steered by training time (``trained()``, evaluation excluded), so every arm runs the whole schedule in
    the same budget whatever its speed. ``train`` calls :meth:`step` after each optimiser step.
    """

    def __init__(self, optimizer, peak: float, budget: float, trained, warmup: float = 0.05) -> None:
        self.optimizer, self.peak, self.budget, self.trained, self.warmup = optimizer, peak, budget, trained, warmup
        self.step()

    def step(self) -> None:
        done = min(1.0, self.trained() / self.budget)
        lr = self.peak * min(1.0, max(done, 0.002) / self.warmup) * (1.0 - done)
        for group in self.optimizer.param_groups:
            group["lr"] = lr


@torch.no_grad()
def mean_loss(model: torch.nn.Module, src: torch.Tensor, tgt: torch.Tensor) -> float:
    """Teacher-forced cross-entropy (nats per target token, no smoothing) of padded pairs, in eval mode."""
    total, count = 0.0, 0
    for i in range(0, len(src), 200):
        s, t = src[i : i + 200], tgt[i : i + 200]
        n = int((t != PAD_ID).sum())
        total += float(sequence_cross_entropy(model(s, shift_right(t, BOS_ID)), t, PAD_ID)) * n
        count += n
    return total / count


def run(arm: str, seed: int, side: Side, split, args, baseline_steps: int | None) -> dict:
    """Train one arm with one seed for the budget; return its record (and, for the baseline, its evaluations)."""
    torch.set_num_threads(1)
    clock = training_clock("cpu")
    model = build(arm, side, seed)
    encode = lambda sents: ([side.src_vocab.encode(side.source(s.english)) for s in sents],  # noqa: E731
                            [side.tgt_vocab.encode(side.target(s.chinese)) for s in sents])
    train_src, train_tgt = encode(split.train)
    batches = PairBatches(train_src, train_tgt, args.batch_size, seed=seed)

    def padded(sents):
        src, tgt = encode(sents)
        return pad_sequences([[*s, EOS_ID] for s in src]), pad_sequences([[*t, EOS_ID] for t in tgt])

    val_src, val_tgt = padded(split.validation)
    fit_src, fit_tgt = padded(split.train[:400])  # the training loss, measured like the validation loss
    val_text = [" ".join(side.source(s.english)) for s in split.validation]
    val_refs = [s.chinese for s in split.validation]

    eval_time, start = [0.0], [None]
    trained = lambda: 0.0 if start[0] is None else clock() - start[0] - eval_time[0]  # noqa: E731
    next_eval = [args.budget / args.evals]
    curve, states = [], []

    def evaluate(m: torch.nn.Module) -> dict[str, float]:
        t0 = clock()
        seconds = trained()
        if seconds + 1e-9 < next_eval[0] and seconds < args.budget:
            eval_time[0] += clock() - t0
            return {}
        while next_eval[0] <= seconds:
            next_eval[0] += args.budget / args.evals
        hyps = [side.detok(h) for h in translate(m, val_text, side.src_vocab, side.tgt_vocab)]
        point = {"step": len(history_losses), "seconds": round(seconds, 2),
                 "train_loss": round(mean_loss(m, fit_src, fit_tgt), 4),
                 "validation_loss": round(mean_loss(m, val_src, val_tgt), 4),
                 "validation_bleu": round(bleu(hyps, val_refs).score, 3)}  # fmt: skip
        curve.append(point)
        if arm == "baseline" and not getattr(args, "long", False):
            states.append(copy.deepcopy(m.state_dict()))
        eval_time[0] += clock() - t0
        return {}

    peak = args.rnn_lr if arm == "rnn" else args.lr
    optimizer = torch.optim.Adam(model.parameters(), lr=peak, betas=(0.9, 0.98), eps=1e-9)
    if arm == "noam":  # the same warm-up steps and peak as the baseline, then 1/sqrt(step)
        warm = max(1, round(0.05 * baseline_steps))
        scheduler = warmup_schedule(optimizer, MODEL["d_model"], warm, factor=peak * math.sqrt(MODEL["d_model"] * warm))
    else:
        scheduler = TimeLinear(optimizer, peak, args.budget, trained)
    history_losses: list[float] = []

    def loss_fn(m, batch):
        loss, n = seq2seq_loss(m, batch, label_smoothing=0.1 if arm == "smoothing" else 0.0)
        history_losses.append(float(loss.detach()))
        return loss, n

    wall = time.perf_counter()
    start[0] = clock()
    history = train(model, batches, loss_fn, optimizer=optimizer, scheduler=scheduler, time_budget_s=args.budget,
                    clip_grad_norm=1.0, evaluate=evaluate, eval_every=5, device="cpu", seed=seed, progress=False,
                    clock=clock)  # fmt: skip
    wall = time.perf_counter() - wall
    test_text = [" ".join(side.source(s.english)) for s in split.test]
    test_refs = [s.chinese for s in split.test]
    test_hyps = [side.detok(h) for h in translate(model, test_text, side.src_vocab, side.tgt_vocab)]
    test_score = bleu(test_hyps, test_refs)
    record = {"arm": arm, "seed": seed, "steps": history.steps, "train_cpu_s": round(history.train_time_s, 2),
              "wall_s": round(wall, 1), "epochs": round(history.epochs, 2),
              "params": sum(p.numel() for p in model.parameters()),
              "validation_bleu": curve[-1]["validation_bleu"], "test_bleu": round(test_score.score, 3),
              "final_train_loss": round(sum(history_losses[-50:]) / len(history_losses[-50:]), 4),
              "curve": curve}  # fmt: skip
    if seed == args.seeds[0]:
        record["test_hypotheses"] = test_hyps
    if arm == "baseline" and not getattr(args, "long", False):
        record["derived"] = derived(model, states, curve, side, split, args.average)
    print(f"{arm:>9} seed {seed}: {history.steps} steps in {history.train_time_s:.1f} CPU s ({wall:.0f} s wall); "
          f"validation BLEU {record['validation_bleu']:.2f}, test BLEU {record['test_bleu']:.2f}", flush=True)  # fmt: skip
    return record


def derived(model, states, curve, side: Side, split, k: int) -> dict:
    """Early stopping and checkpoint averaging from the saved evaluations of one baseline run (no training)."""
    val_text = [" ".join(side.source(s.english)) for s in split.validation]
    test_text = [" ".join(side.source(s.english)) for s in split.test]
    val_refs, test_refs = [s.chinese for s in split.validation], [s.chinese for s in split.test]

    def score(state):
        model.load_state_dict(state)
        val = [side.detok(h) for h in translate(model, val_text, side.src_vocab, side.tgt_vocab)]
        test = [side.detok(h) for h in translate(model, test_text, side.src_vocab, side.tgt_vocab)]
        return round(bleu(val, val_refs).score, 3), round(bleu(test, test_refs).score, 3)

    last = states[-k:]
    averaged = {name: sum(s[name].double() for s in last).div(len(last)).to(last[-1][name].dtype) for name in last[-1]}
    avg_val, avg_test = score(averaged)
    best = max(range(len(curve)), key=lambda i: curve[i]["validation_bleu"])
    es_val, es_test = score(states[best])
    model.load_state_dict(states[-1])
    return {"averaged": {"validation_bleu": avg_val, "test_bleu": avg_test, "evaluations": len(last)},
            "early_stop": {"validation_bleu": es_val, "test_bleu": es_test, "step": curve[best]["step"],
                           "seconds": curve[best]["seconds"]}}  # fmt: skip


def summary(values: list[float]) -> dict:
    return {"mean": round(sum(values) / len(values), 3), "min": min(values), "max": max(values), "runs": values}


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    p.add_argument("--budget", type=float, default=45.0, help="CPU seconds of training per run (one thread)")
    p.add_argument("--lr", type=float, default=3e-3, help="peak learning rate of the Transformers")
    p.add_argument("--rnn-lr", type=float, default=3e-3, help="peak learning rate of the RNN (chapter 02's)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--d-model", type=int, default=MODEL["d_model"], help="D of the Transformers (F = 4 D)")
    p.add_argument("--bpe-size", type=int, default=4000, help="shared sentencepiece vocabulary (pieces)")
    p.add_argument("--evals", type=int, default=8, help="evaluations per run, evenly spaced in training time")
    p.add_argument("--average", type=int, default=3, help="checkpoint averaging: the last k evaluations")
    p.add_argument("--long-budget", type=float, default=150.0,
                   help="one more baseline run (first seed) this long, for the over-fitting curve (0: none)")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--update", action="store_true",
                   help="rerun only --arms and merge them into --out's other arms (their runs kept as they are)")
    args = p.parse_args(argv)
    previous = json.loads(args.out.read_text(encoding="utf-8")) if args.update else None
    torch.set_num_threads(1)
    MODEL.update(d_model=args.d_model, d_ff=4 * args.d_model)
    corpus = load_hsk()
    split = split_hsk(corpus.sentences)
    words, pieces = Side(split, None), Side(split, args.bpe_size)
    runs: dict[str, list[dict]] = {}
    for arm in args.arms:
        side = pieces if arm in ("bpe", "tied") else words
        base_steps = None
        if arm == "noam":
            base_steps = round(sum(r["steps"] for r in runs.get("baseline", [])) / max(1, len(runs.get("baseline", []))))
            base_steps = base_steps or 1000
        runs[arm] = [run(arm, seed, side, split, args, base_steps) for seed in args.seeds]
    overfit = previous["overfit"] if previous else None
    if previous:  # the arms not rerun keep their runs, in the file's order
        runs = {arm: runs.get(arm, records) for arm, records in previous["runs"].items()} | runs
    if args.long_budget and not args.update:
        long_args = argparse.Namespace(**{**vars(args), "budget": args.long_budget, "evals": 10, "long": True})
        overfit = run("baseline", args.seeds[0], words, split, long_args, None)
        overfit.pop("test_hypotheses", None)
    table = {}
    for arm, records in runs.items():
        table[arm] = {"validation_bleu": summary([r["validation_bleu"] for r in records]),
                      "test_bleu": summary([r["test_bleu"] for r in records]),
                      "steps": summary([r["steps"] for r in records]),
                      "train_cpu_s": summary([r["train_cpu_s"] for r in records])}  # fmt: skip
    if "baseline" in runs:
        for name in ("averaged", "early_stop"):
            records = [r["derived"][name] for r in runs["baseline"]]
            table[name] = {"validation_bleu": summary([r["validation_bleu"] for r in records]),
                           "test_bleu": summary([r["test_bleu"] for r in records]),
                           "steps": table["baseline"]["steps"], "train_cpu_s": table["baseline"]["train_cpu_s"]}  # fmt: skip
    refs = [s.chinese for s in split.test]
    scorer = sacrebleu.BLEU(tokenize="zh")
    scorer.corpus_score(refs[:1], [refs[:1]])
    signature = str(scorer.get_signature())
    result = {
        "description": "English -> Chinese on the HSK sentences (chapter 11, section 4); made by "
                       "benchmarks/hsk_translation.py",
        "command": "OMP_NUM_THREADS=1 PYTHONPATH=$PWD .venv/bin/python benchmarks/hsk_translation.py "
                   + " ".join(argv),
        "earlier_commands": ([previous["command"], *previous.get("earlier_commands", [])] if previous else []),
        "data": {"source": corpus.source, "train": len(split.train), "validation": len(split.validation),
                 "test": len(split.test)},
        "settings": {"budget_cpu_s": args.budget, "seeds": args.seeds, "model": MODEL, "rnn": RNN, "lr": args.lr,
                     "rnn_lr": args.rnn_lr, "batch_size": args.batch_size, "bpe_size": args.bpe_size,
                     "evaluations": args.evals, "average_last": args.average, "warmup_share": 0.05,
                     "vocab": {"words_src": len(words.src_vocab), "chars_tgt": len(words.tgt_vocab),
                               "bpe_shared": len(pieces.src_vocab)}},
        "sacrebleu_signature": signature,
        "torch": torch.__version__,
        "sacrebleu": sacrebleu.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "test_sources": [s.english for s in split.test],
        "test_references": refs,
        "table": table,
        "runs": runs,
        "overfit": overfit,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}; {signature}")


if __name__ == "__main__":
    main(sys.argv[1:])
