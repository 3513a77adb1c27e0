"""Train and save the poet the book ships: ``tformer/book/checkpoints/poet_tang.pt``.

    .venv/bin/python tools/make_poet.py                # about 11 minutes: 600 CPU seconds of one thread, then checks
    .venv/bin/python tools/make_poet.py --record-only  # keep the weights, compute the record again (seconds)

The chapter's model and recipe (:func:`tformer.book.poet.train_poet`, seed 0) with a budget four times the
chapter's 150 s. Weights are stored in float16 (half the bytes); the record (validation loss, a greedy line and
a sampled poem) is computed from the stored weights read back into a float32 model, so a reader who loads the
file gets exactly what the record says.
"""

from __future__ import annotations

import argparse
import copy
import math
import time
from pathlib import Path

import torch

from tformer.book.playground import continue_poem
from tformer.book.poet import poem_data, poet_config, train_poet, validation_loss
from tformer.book.shipped import POET_FILE, POET_PROMPT, load_poet
from tformer.training.train import save_checkpoint

BUDGET_S, SEED = 600.0, 0
OUT = Path(__file__).resolve().parent.parent / "tformer" / "book" / "checkpoints" / POET_FILE


def write_record(model: torch.nn.Module, record: dict) -> dict:
    """Save ``model`` in float16 with ``record``, read it back as a reader will, and add what the reader gets."""
    data = poem_data()
    save_checkpoint(OUT, copy.deepcopy(model).half(), vocabs={"chars": data.vocab}, extra=record)
    poet = load_poet()
    loss = validation_loss(poet.model, data.validation)
    record = record | {"val_nats": loss, "val_bits": loss / math.log(2),
                       "greedy": continue_poem(poet, POET_PROMPT).text,
                       "sampled": continue_poem(poet, POET_PROMPT, temperature=0.8, top_p=0.9, seed=0).text}
    save_checkpoint(OUT, copy.deepcopy(model).half(), vocabs={"chars": data.vocab}, extra=record)
    return record


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record-only", action="store_true", help="keep the stored weights; write the record again")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    if args.record_only:
        poet = load_poet()
        keep = ("config", "recipe", "steps", "train_cpu_s")
        record = write_record(poet.model, {k: poet.record[k] for k in keep})
    else:
        data = poem_data()
        model, history = train_poet(data, seed=SEED, budget_s=BUDGET_S)
        record = write_record(model, {
            "config": dict(vars(poet_config(len(data.vocab)))),
            "recipe": f"tformer.book.poet.train_poet(seed={SEED}, budget_s={BUDGET_S:g}), one torch thread",
            "steps": history.steps, "train_cpu_s": round(history.train_time_s, 1)})
    print(f"{record['steps']} steps, {record['train_cpu_s']} CPU s, validation {record['val_nats']:.3f} nats; "
          f"{time.perf_counter() - start:.0f} s in all -> {OUT} ({OUT.stat().st_size:,} bytes)")
    print(record["greedy"], record["sampled"], sep="\n")


if __name__ == "__main__":
    main()
