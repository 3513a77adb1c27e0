"""Self-checking exercises: a reader checks an answer without seeing the solution (every chapter's end).

Each chapter keeps its answers in ``tformer/exercise_answers/NN.json`` as SHA-256 digests of a canonical text
form of the answer, with the number of decimals that matter and a hint. ``check("05.2", answer)`` rounds the
reader's answer the same way, compares digests, and prints a one-line verdict. The worked solutions live in
``tests/exercises/test_exercises_NN.py``, which prove every stored digest is the digest of the right answer.

The canonical form: numbers are rounded to ``decimals`` places (``-0`` becomes ``0``); tensors, arrays, lists
and tuples are flattened and joined with commas; strings are stripped and words separated by single spaces.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import torch

from tformer._checks import check_int

__all__ = ["answer_digest", "check", "exercise_ids", "make_entry"]


def _canonical(answer: Any, decimals: int) -> str:
    if isinstance(answer, str):
        return " ".join(answer.split())
    if isinstance(answer, torch.Tensor):
        answer = answer.detach().cpu().double().numpy()
    if isinstance(answer, (np.ndarray, Sequence)):
        values = np.asarray(answer, dtype=np.float64).ravel()
    elif isinstance(answer, (int, float, np.number)) and not isinstance(answer, bool):
        values = np.asarray([answer], dtype=np.float64)
    else:
        raise TypeError(f"answer: expected a number, a sequence of numbers, a tensor or a string, got {type(answer).__name__}")
    if not np.all(np.isfinite(values)):
        raise ValueError("answer: expected finite numbers, got NaN or infinity")
    # Adding 0.0 turns a rounded -0.0 into 0.0, so "-0.00" and "0.00" hash alike.
    return ",".join(f"{round(float(v), decimals) + 0.0:.{decimals}f}" for v in values)


def answer_digest(answer: Any, decimals: int) -> str:
    """SHA-256 hex digest of ``answer`` in canonical form, rounded to ``decimals`` places.

    Raises:
        TypeError: if ``answer`` is not a number, a sequence of numbers, a tensor/array or a string.
        ValueError: if it holds NaN or infinity, or ``decimals`` is negative.
    """
    check_int("decimals", decimals, 0)
    return hashlib.sha256(_canonical(answer, decimals).encode()).hexdigest()


def make_entry(answer: Any, decimals: int, hint: str) -> dict[str, Any]:
    """The JSON entry an author stores for one exercise (used when writing a chapter's answer file)."""
    return {"digest": answer_digest(answer, decimals), "decimals": decimals, "hint": hint}


@cache
def _answers() -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    for entry in sorted(resources.files("tformer.book.exercise_answers").iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".json"):
            table.update(json.loads(entry.read_text(encoding="utf-8")))
    return table


def exercise_ids() -> list[str]:
    """Every exercise id with a stored answer, e.g. ``["03.1", "03.2", ...]``."""
    return sorted(_answers())


def check(exercise_id: str, answer: Any) -> bool:
    """Check a reader's answer to exercise ``exercise_id`` (e.g. ``"05.2"``); print a verdict and return it.

    Raises:
        ValueError: if ``exercise_id`` is unknown.
        TypeError: if ``answer`` has an unsupported type (see ``answer_digest``).
    """
    table = _answers()
    if exercise_id not in table:
        raise ValueError(f"exercise_id: expected a known exercise ({', '.join(sorted(table))}), got {exercise_id!r}")
    entry = table[exercise_id]
    correct = answer_digest(answer, entry["decimals"]) == entry["digest"]
    verdict = "correct!" if correct else f"not yet. Hint: {entry['hint']}"
    # The verdict is the checker's whole purpose, so it prints (the one exception to "library code never prints").
    print(f"Exercise {exercise_id}: {verdict}", file=sys.stdout)
    return correct
