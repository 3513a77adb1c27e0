"""Chapter 11, §2: the reading tagger (RoPE, neighbour embedding) and its controls, 3 seeds each, on validation.

    flock /tmp/cpu.lock env OMP_NUM_THREADS=1 PYTHONPATH=$PWD .venv/bin/python benchmarks/hsk_reader.py
    ... --steps 20 --out /tmp/quick.json          # a quick end-to-end check
    ... --arms rope --out /tmp/rope.json          # one arm (run arms in parallel processes), then
    ... --merge /tmp/rope.json /tmp/other.json    # combine the part files into the shipped file and choose

Fifteen runs of the chapter's tagger (five arms, three seeds) take about eight minutes of one CPU thread (the file
records each run's ``train_seconds``), more than the chapter may spend beside its other sections, so the numbers
ship in ``tformer/book/benchmarks/hsk_reader.json``. Every run is scored on the **validation split only**: the
arm is chosen there (the best validation score of the worst seed, ties broken by the mean), and the chapter trains
the chosen arm's three seeds again, checks each against this file's validation score, and scores it on the test
split, once. No run of this script reads the test split. The file also holds a digest of the chapter cells it ran
(``cells_sha256``), so that a test notices a chapter edit made without a re-run.
The arms: RoPE with the (previous character, character) pair embedding and the width-3 convolution, each of
those two ingredients alone, neither (the RoPE tagger), and neither with sinusoidal positions (the control for
RoPE).

The code is the chapter's own: this script executes ``notebooks/11_real_sentences.py`` up to the cell that
defines ``read_aloud`` (data, split, lookups, vocabulary, ``ReadingTagger``, ``train_reader``), then trains each
arm for the chapter's ``READ_STEPS`` optimiser steps per seed (the same schedule, batches and settings; only
``positional``, ``pairs`` and ``conv`` differ) and scores it on the validation split. With a fixed number of steps
and one torch thread the scores are the same on every run on one machine.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import io
import json
import os
import re
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "11_real_sentences.py"
OUT = ROOT / "tformer" / "book" / "benchmarks" / "hsk_reader.json"
ARMS = {  # name -> train_reader's settings
    "rope_pairs_conv": {"positional": "rope", "pairs": True, "conv": True},
    "rope_pairs": {"positional": "rope", "pairs": True, "conv": False},
    "rope_conv": {"positional": "rope", "pairs": False, "conv": True},
    "rope": {"positional": "rope", "pairs": False, "conv": False},
    "sinusoidal": {"positional": "sinusoidal", "pairs": False, "conv": False},
}
SEEDS = (0, 1, 2)


def chapter_cells(notebook: Path = NOTEBOOK) -> list[str]:
    """The chapter's code cells that the benchmark runs: from the first up to the one defining ``read_aloud``."""
    cells = re.split(r"^# %%.*$", notebook.read_text(encoding="utf-8"), flags=re.M)
    code = [cell for cell in cells if not all(not line.strip() or line.startswith("#") for line in cell.splitlines())]
    (last,) = [i for i, cell in enumerate(code) if "def read_aloud(" in cell]
    return code[: last + 1]


def cells_digest(cells: list[str]) -> str:
    """SHA-256 of the cells' syntax trees: any change to the code they run changes it; comments and layout do not.

    Stored in the JSON file with the Python version that made it, it lets a test notice a chapter edit made
    without re-running this script. A tree's dump differs between Python versions (3.12 and 3.13 changed its
    fields), so the test compares only under the file's version. The package code the cells call
    (``tformer``) is not covered: the chapter's reproduction check (on a CPU, the chosen arm's validation and
    test scores within 0.5 points of this file) catches a package change that moves the chosen arm, not one
    that moves only a control.
    """
    trees = "\n".join(ast.dump(ast.parse(cell)) for cell in cells)
    return hashlib.sha256(trees.encode("utf-8")).hexdigest()


def chapter_namespace(steps: int | None) -> dict:
    """Run the chapter's code cells up to the one that defines ``read_aloud``; return their namespace."""
    import matplotlib

    matplotlib.use("Agg")
    cells = chapter_cells()
    namespace: dict = {"__name__": "chapter_11", "CELLS_SHA256": cells_digest(cells)}  # of the code that runs
    cwd = os.getcwd()
    os.chdir(NOTEBOOK.parent)  # as the notebook runs
    try:
        for cell in cells:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(cell, str(NOTEBOOK), "exec"), namespace)
    finally:
        os.chdir(cwd)
    if steps is not None:
        namespace["READ_STEPS"] = steps
    return namespace


def choose(runs: dict[str, list[dict]]) -> str:
    """The rule: the arm with the best validation polyphone accuracy on its worst seed; ties go to the best mean."""
    def key(arm: str) -> tuple[float, float]:
        scores = [r["validation"]["polyphone_accuracy"] for r in runs[arm]]
        return min(scores), sum(scores) / len(scores)

    return max(runs, key=key)


def merge(parts: list[Path], out: Path) -> int:
    """Combine part files (each from ``--arms``) into one file with every arm, in ``ARMS`` order, and choose."""
    loaded = [json.loads(path.read_text(encoding="utf-8")) for path in parts]
    first = loaded[0]
    for other in loaded[1:]:
        for key in ("torch", "threads", "python", "cells_sha256"):
            assert other[key] == first[key], (key, other[key], first[key])
        assert {k: v for k, v in other["settings"].items() if k != "chosen"} == \
            {k: v for k, v in first["settings"].items() if k != "chosen"}
    runs = {arm: run for part in loaded for arm, run in part["runs"].items()}
    assert set(runs) == set(ARMS) and sum(len(part["runs"]) for part in loaded) == len(ARMS), sorted(runs)
    result = {**first, "command": first["command"].split(" --arms")[0], "runs": {arm: runs[arm] for arm in ARMS}}
    result["settings"] = {**first["settings"], "chosen": choose(result["runs"])}
    result["made_in_parts"] = [part["command"] for part in loaded]
    out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}; chosen: {result['settings']['chosen']}")
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=None, help="override the chapter's READ_STEPS (quick checks)")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS),
                   help="run only these arms and write a part file to --out (to run arms in parallel processes)")
    p.add_argument("--merge", nargs="+", type=Path, default=None,
                   help="combine part files written with --arms into --out, then choose the arm")
    args = p.parse_args(argv)
    if args.merge:
        return merge(args.merge, args.out)
    torch.set_num_threads(1)
    ns = chapter_namespace(args.steps)
    split, score = ns["split"], ns["score_readings"]
    runs: dict[str, list[dict]] = {}
    for arm, settings in ARMS.items():
        if arm not in args.arms:
            continue
        runs[arm] = []
        for seed in SEEDS:
            model, seconds = ns["train_reader"](seed, ns["READ_STEPS"], **settings)
            row = {"seed": seed, "steps": ns["READ_STEPS"], "train_seconds": round(seconds, 1)}
            found = score(ns["read_aloud"](model, split.validation), split.validation, split.train)
            row["validation"] = {"polyphone_accuracy": 100 * found.polyphone_accuracy, "accuracy": 100 * found.accuracy,
                                 "polyphone_errors": round((1 - found.polyphone_accuracy) * found.num_polyphone_chars)}
            runs[arm].append(row)
            print(f"{arm:>15} seed {seed}: {row['steps']} steps, {seconds:.0f} s; polyphones "
                  f"{row['validation']['polyphone_accuracy']:.2f}% validation", flush=True)  # fmt: skip
    chosen_arm = choose(runs) if set(runs) == set(ARMS) else None  # a part file chooses nothing
    result = {
        "command": "OMP_NUM_THREADS=1 PYTHONPATH=$PWD .venv/bin/python benchmarks/hsk_reader.py"
        + ("" if args.steps is None else f" --steps {args.steps}")
        + ("" if args.arms == list(ARMS) else f" --arms {' '.join(args.arms)}"),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",  # the digest below is this version's
        "cells_sha256": ns["CELLS_SHA256"],
        "settings": {
            "steps": ns["READ_STEPS"], "peak_lr": ns["PEAK_LR"], "chosen": chosen_arm, "arms": ARMS,
            "seeds": list(SEEDS), "scored_on": ["validation"],
        },
        "runs": runs,
    }
    args.out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
