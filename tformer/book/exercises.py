"""Self-checking exercises: a reader checks an answer without seeing the solution (every chapter's end).

Two kinds of exercise share one answer file per chapter:

- **arithmetic** (``check``): the answer is a number the reader computes; the file stores its digest;
- **run-it** (``check_measured``): the reader changes something in the chapter's code, runs it and passes the
  measured value; the file stores the accepted range, derived from the values the book itself measured over
  several seeds (``measured_range``), with the per-seed values and the rule, so a test can re-derive it.

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

from tformer._checks import check_int, check_number, check_type

__all__ = [
    "answer_digest",
    "check",
    "check_measured",
    "exercise_ids",
    "make_entry",
    "make_measured_entry",
    "measured_range",
]


_ANSWER_TYPES = "a number, a sequence of numbers, a real tensor/array or a string"


def _is_real(value: object) -> bool:
    """An int, float or real NumPy scalar; not a bool (True is no measured answer) and not complex."""
    return (isinstance(value, (int, float, np.integer, np.floating))
            and not isinstance(value, (bool, np.bool_)))  # fmt: skip


def _check_leaves(answer: Sequence, where: str) -> None:
    """Every leaf of a (possibly nested) list or tuple is a real number."""
    for i, item in enumerate(answer):
        if isinstance(item, (list, tuple)):
            _check_leaves(item, f"{where}[{i}]")
        elif not _is_real(item):
            raise TypeError(f"{where}[{i}]: expected a real number (answer: {_ANSWER_TYPES}), got "
                            f"{type(item).__name__} {item!r:.30}")  # fmt: skip


def _canonical(answer: Any, decimals: int) -> str:
    if isinstance(answer, str):
        return " ".join(answer.split())
    if isinstance(answer, (torch.Tensor, np.ndarray)):
        kind = answer.dtype.is_complex or answer.dtype == torch.bool if isinstance(answer, torch.Tensor) else (
            answer.dtype.kind not in "iuf")  # fmt: skip
        if kind:  # a complex value would lose its imaginary part, a bool mask is no number
            raise TypeError(f"answer: expected a real (integer or floating-point) tensor or array, got dtype "
                            f"{answer.dtype}")  # fmt: skip
        if isinstance(answer, torch.Tensor):
            answer = answer.detach().cpu().double().numpy()
        values = np.asarray(answer, dtype=np.float64).ravel()
    elif isinstance(answer, (list, tuple)):
        _check_leaves(answer, "answer")
        try:
            values = np.asarray(answer, dtype=np.float64).ravel()
        except (ValueError, OverflowError) as err:  # ragged nesting, or an int too large for a float
            raise ValueError(f"answer: expected finite numbers in nested lists of one shape, got {answer!r:.60}"
                             ) from err  # fmt: skip
    elif _is_real(answer):
        try:
            values = np.asarray([float(answer)], dtype=np.float64)
        except OverflowError:
            raise ValueError("answer: expected a finite number, got an int too large for a float") from None
    else:
        raise TypeError(f"answer: expected {_ANSWER_TYPES}, got {type(answer).__name__}")
    if values.size == 0:
        raise ValueError("answer: expected at least one number, got an empty sequence")
    if not np.all(np.isfinite(values)):
        raise ValueError("answer: expected finite numbers, got NaN or infinity")
    # Adding 0.0 turns a rounded -0.0 into 0.0, so "-0.00" and "0.00" hash alike.
    return ",".join(f"{round(float(v), decimals) + 0.0:.{decimals}f}" for v in values)


def answer_digest(answer: Any, decimals: int) -> str:
    """SHA-256 hex digest of ``answer`` in canonical form, rounded to ``decimals`` places.

    Raises:
        TypeError: if ``answer`` is not a number, a (nested) list or tuple of numbers, a real tensor/array or a
            string: bytes, bools (``True``, ``[True, False]``, a bool tensor), complex values and strings inside
            a list are refused, the message naming ``answer`` or the offending item.
        ValueError: if it holds NaN, infinity or an int too large for a float, is empty, is a ragged nesting,
            or ``decimals`` is negative.
    """
    decimals = check_int("decimals", decimals, 0)
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


def _entry(exercise_id: object) -> dict[str, Any]:
    check_type("exercise_id", exercise_id, str, "a str such as '05.2'")
    table = _answers()
    if exercise_id not in table:
        raise ValueError(f"exercise_id: expected a known exercise ({', '.join(sorted(table))}), got {exercise_id!r}")
    return table[exercise_id]


def check(exercise_id: str, answer: Any) -> bool:
    """Check a reader's answer to exercise ``exercise_id`` (e.g. ``"05.2"``); print a verdict and return it.

    Raises:
        ValueError: if ``exercise_id`` is unknown, or ``answer`` is empty or not finite (see :func:`answer_digest`).
        TypeError: if ``answer`` has an unsupported type (see :func:`answer_digest`).
    """
    entry = _entry(exercise_id)
    if entry.get("kind") == "measured":
        raise ValueError(f"exercise_id: expected an arithmetic exercise (use check_measured for {exercise_id}), "
                         f"got {exercise_id!r}")
    correct = answer_digest(answer, entry["decimals"]) == entry["digest"]
    verdict = "correct!" if correct else f"not yet. Hint: {entry['hint']}"
    # The verdict is the checker's whole purpose, so it prints (the one exception to "library code never prints").
    print(f"Exercise {exercise_id}: {verdict}", file=sys.stdout)
    return correct


# ---------------------------------------------------------------------------------------------------------------
# Run-it exercises: the reader measures, the checker compares with the book's own seed spread.

MEASURED_RULE = (
    "low = min(seed values) - margin * |mean|, high = max(seed values) + margin * |mean|, "
    "then clipped to [floor, ceiling]"
)


def measured_range(
    seed_values: Sequence[float], margin: float, floor: float | None = None, ceiling: float | None = None
) -> tuple[float, float]:
    """The accepted range for a run-it exercise, from the values the book measured over several seeds.

    The rule (stored with each entry as ``derivation``): take the min and max over the seeds and widen each end by
    ``margin`` times the absolute mean, so a reader's run on other hardware, thread count or seed still lands
    inside; then clip to the quantity's physical bounds (a loss is at least 0, a weight at most 1).

    Args:
        seed_values: the measured value for each seed, at least three.
        margin: the widening as a fraction of the absolute mean, a non-negative number.
        floor, ceiling: physical bounds of the quantity, or ``None``.

    Returns:
        ``(low, high)`` floats with ``low <= high``.

    Raises:
        TypeError: if ``seed_values`` is not a sequence of real numbers, or ``margin``, ``floor`` or ``ceiling``
            is not a number.
        ValueError: if it holds fewer than three values or a non-finite one, ``margin`` is negative or not
            finite, ``floor`` or ``ceiling`` is not finite, ``floor > ceiling``, or the widened range lies wholly
            outside ``[floor, ceiling]`` (the result would be empty).
    """
    if isinstance(seed_values, (str, bytes)) or not isinstance(seed_values, Sequence):
        raise TypeError(f"seed_values: expected a sequence of numbers, got {type(seed_values).__name__}")
    values = [check_number(f"seed_values[{i}]", v) for i, v in enumerate(seed_values)]
    if len(values) < 3:
        raise ValueError(f"seed_values: expected at least 3 seeds, got {len(values)}")
    if not all(np.isfinite(values)):
        raise ValueError(f"seed_values: expected finite numbers, got {values}")
    margin = check_number("margin", margin, 0.0, float("inf"), open_max=True)
    floor = None if floor is None else check_number("floor", floor, float("-inf"), float("inf"), open_min=True,
                                                    open_max=True)  # fmt: skip
    ceiling = None if ceiling is None else check_number("ceiling", ceiling, float("-inf"), float("inf"),
                                                        open_min=True, open_max=True)  # fmt: skip
    if floor is not None and ceiling is not None and floor > ceiling:
        raise ValueError(f"floor: expected at most ceiling ({ceiling}), got {floor}")
    pad = margin * abs(sum(values) / len(values))
    low, high = min(values) - pad, max(values) + pad
    if floor is not None:
        low = max(low, floor)
    if ceiling is not None:
        high = min(high, ceiling)
    if low > high:  # the seeds lie wholly outside the physical bounds: no value could pass
        raise ValueError(f"seed_values: expected values that meet [floor, ceiling] = [{floor}, {ceiling}] once "
                         f"widened to [{min(values) - pad:g}, {max(values) + pad:g}], got an empty range")
    return low, high


def make_measured_entry(
    seed_values: Sequence[float],
    margin: float,
    *,
    seeds: Sequence[int],
    quantity: str,
    control: Sequence[float],
    too_low: str,
    too_high: str,
    hint: str,
    floor: float | None = None,
    ceiling: float | None = None,
) -> dict[str, Any]:
    """The JSON entry an author stores for one run-it exercise (``benchmarks/exercise_ranges.py`` writes them).

    Args:
        seed_values: the book's measurement with the reader's change made, one per seed.
        margin, floor, ceiling: see ``measured_range``.
        seeds: the seeds those values came from (same length).
        quantity: what is measured, e.g. "final training loss without the causal mask".
        control: the same measurement without the change, one per seed (the answer of a reader who forgot it).
        too_low, too_high: what a value below / above the range usually means.
        hint: what to check or try next.

    Raises:
        TypeError, ValueError: as ``measured_range``; ValueError if ``seeds`` and ``seed_values`` differ in length.
    """
    low, high = measured_range(seed_values, margin, floor, ceiling)
    if len(seeds) != len(seed_values):
        raise ValueError(f"seeds: expected one seed per value ({len(seed_values)}), got {len(seeds)}")
    return {
        "kind": "measured",
        "quantity": quantity,
        "seeds": [int(s) for s in seeds],
        "seed_values": [float(v) for v in seed_values],
        "control": [float(v) for v in control],
        "margin": float(margin),
        "floor": floor,
        "ceiling": ceiling,
        "derivation": f"{MEASURED_RULE}; margin = {margin:g}, {len(seed_values)} seeds",
        "low": low,
        "high": high,
        "too_low": too_low,
        "too_high": too_high,
        "hint": hint,
    }


def _fmt(x: float) -> str:
    return f"{x:.3g}" if x != 0 and (abs(x) < 1e-2 or abs(x) >= 1e4) else f"{x:.4f}".rstrip("0").rstrip(".")


def check_measured(exercise_id: str, measured: Any) -> bool:
    """Check a value the reader measured for run-it exercise ``exercise_id``; print a verdict and return it.

    The value is accepted when it lies in the stored range (see ``measured_range``). The one-line verdict names
    the range and the book's seed spread; a miss says whether the value is too high or too low, what that
    usually means, and a hint.

    Args:
        exercise_id: e.g. ``"06.5"``.
        measured: a real number, or a tensor/array holding exactly one.

    Raises:
        ValueError: if ``exercise_id`` is unknown or is an arithmetic exercise, or ``measured`` is not finite or
            holds more than one number.
        TypeError: if ``measured`` is not a number (a bool, a string, a list).
    """
    entry = _entry(exercise_id)
    if entry.get("kind") != "measured":
        raise ValueError(f"exercise_id: expected a run-it exercise (use check for {exercise_id}), got {exercise_id!r}")
    if isinstance(measured, (torch.Tensor, np.ndarray)):
        size = measured.numel() if isinstance(measured, torch.Tensor) else measured.size
        if size != 1:
            raise ValueError(f"measured: expected a single number, got a tensor of shape {tuple(measured.shape)}")
        measured = measured.item()
    if isinstance(measured, np.number):
        measured = measured.item()
    value = check_number("measured", measured)
    if not np.isfinite(value):
        raise ValueError(f"measured: expected a finite number, got {value}")
    low, high = entry["low"], entry["high"]
    seeds = entry["seed_values"]
    where = f"range [{_fmt(low)}, {_fmt(high)}]; the book's {len(seeds)} seeds: {_fmt(min(seeds))} to {_fmt(max(seeds))}"
    if low <= value <= high:
        verdict = f"{_fmt(value)} is in the expected {where}. Correct!"
    else:
        side, meaning = ("too low", entry["too_low"]) if value < low else ("too high", entry["too_high"])
        verdict = f"{_fmt(value)} is {side} for the {where}. {meaning} Hint: {entry['hint']}"
    print(f"Exercise {exercise_id}: {verdict}", file=sys.stdout)
    return low <= value <= high
