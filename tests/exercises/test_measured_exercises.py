"""Run-it exercises: every stored range is re-derived from the stored seeds, and each checker accepts a right
measurement and rejects a wrong one (the unchanged run's value, the mistake a reader makes most).

No training happens here: the per-seed values were measured by ``benchmarks/exercise_ranges.py`` from the
functions in the chapters' exercise sections, and the tests check the range follows from them by the stated rule.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import math
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import torch

from tformer.book.exercises import (
    MEASURED_RULE,
    answer_digest,
    check,
    check_measured,
    make_measured_entry,
    measured_range,
)

ROOT = Path(__file__).resolve().parents[2]


def measured_entries() -> dict[str, dict]:
    table = {}
    for path in resources.files("tformer.book.exercise_answers").iterdir():
        if path.name.endswith(".json"):
            table.update({k: v for k, v in json.loads(path.read_text(encoding="utf-8")).items()
                          if v.get("kind") == "measured"})
    return table


ENTRIES = measured_entries()
IDS = sorted(ENTRIES)


def load_script():
    spec = importlib.util.spec_from_file_location("exercise_ranges", ROOT / "benchmarks" / "exercise_ranges.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Chapters whose exercise section has its run-it exercises so far (issue 14); the rest follow.
WITH_RUN_IT = ("01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14", "15", "16")


@pytest.mark.parametrize("chapter", WITH_RUN_IT)
def test_the_chapter_has_at_least_two_run_it_exercises(chapter: str) -> None:
    assert len([i for i in IDS if i.startswith(f"{chapter}.")]) >= 2


def test_the_first_run_it_chapters_keep_their_exercises() -> None:
    assert {"03.5", "03.6", "04.4", "04.5", "05.4", "05.5", "06.4", "06.5", "07.5", "07.6"} <= set(IDS)


@pytest.mark.parametrize("exercise_id", IDS)
def test_the_change_separates_from_the_control_in_every_seed(exercise_id: str) -> None:
    # Every seed's changed run lies outside the range spanned by the unchanged runs, and the other way round.
    entry = ENTRIES[exercise_id]
    changed, control = entry["seed_values"], entry["control"]
    assert max(changed) < min(control) or min(changed) > max(control)
    assert not any(entry["low"] <= value <= entry["high"] for value in control)


def test_the_script_and_the_answer_files_name_the_same_exercises() -> None:
    assert sorted(load_script().EXERCISES) == IDS


@pytest.mark.parametrize("exercise_id", IDS)
def test_stored_range_is_rederived_from_the_stored_seeds(exercise_id: str) -> None:
    entry = ENTRIES[exercise_id]
    assert len(entry["seeds"]) == len(entry["seed_values"]) == len(entry["control"]) >= 3
    low, high = measured_range(entry["seed_values"], entry["margin"], entry["floor"], entry["ceiling"])
    assert (entry["low"], entry["high"]) == (low, high)
    assert entry["derivation"].startswith(MEASURED_RULE) and f"margin = {entry['margin']:g}" in entry["derivation"]
    spec = load_script().EXERCISES[exercise_id]
    assert (entry["margin"], entry["floor"], entry["ceiling"]) == (spec["margin"], spec["floor"], spec["ceiling"])
    rebuilt = make_measured_entry(entry["seed_values"], entry["margin"], seeds=entry["seeds"],
                                  control=entry["control"], floor=entry["floor"], ceiling=entry["ceiling"],
                                  **{k: spec[k] for k in ("quantity", "too_low", "too_high", "hint")})
    assert rebuilt == entry


@pytest.mark.parametrize("exercise_id", IDS)
def test_the_chapter_defines_the_function_and_the_checker_cell(exercise_id: str) -> None:
    spec = load_script().EXERCISES[exercise_id]
    source = (ROOT / "notebooks" / f"{spec['notebook']}.py").read_text(encoding="utf-8")
    assert f"def {spec['function']}(" in source
    assert f'check_measured("{exercise_id}", measured)' in source
    for argument in spec["change"]:
        assert f"{argument}=" in source  # the exercise text tells the reader which argument to change


@pytest.mark.parametrize("exercise_id", IDS)
def test_the_script_loads_the_function_from_the_chapter(exercise_id: str) -> None:
    script = load_script()
    spec = script.EXERCISES[exercise_id]
    function = script.load_function(spec["notebook"], spec["function"], tuple(spec.get("uses", ())))  # the imports and one cell, no call
    assert {"seed", *spec["change"]} <= set(inspect.signature(function).parameters)


@pytest.mark.parametrize("exercise_id", IDS)
def test_a_right_measurement_is_accepted(exercise_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    entry = ENTRIES[exercise_id]
    for value in entry["seed_values"]:
        assert check_measured(exercise_id, value) is True
    # Another seed or machine: anywhere between the seeds, and a tensor as a model returns it.
    assert check_measured(exercise_id, torch.tensor(float(np.mean(entry["seed_values"])))) is True
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith(f"Exercise {exercise_id}: ") and line.endswith("Correct!")


@pytest.mark.parametrize("exercise_id", IDS)
def test_the_unchanged_run_is_rejected_with_an_explanation(exercise_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    entry = ENTRIES[exercise_id]
    control = float(np.mean(entry["control"]))
    assert check_measured(exercise_id, control) is False
    out = capsys.readouterr().out.strip()
    assert len(out.splitlines()) == 1  # one line
    side, meaning = ("too low", entry["too_low"]) if control < entry["low"] else ("too high", entry["too_high"])
    assert f"is {side} for the range" in out and meaning in out and f"Hint: {entry['hint']}" in out


@pytest.mark.parametrize("exercise_id", IDS)
def test_every_seed_of_the_unchanged_run_lies_outside_the_range(exercise_id: str) -> None:
    # The change separates from its control in every seed, not only on average.
    entry = ENTRIES[exercise_id]
    assert all(not entry["low"] <= value <= entry["high"] for value in entry["control"])
    assert max(entry["control"]) < min(entry["seed_values"]) or min(entry["control"]) > max(entry["seed_values"])


@pytest.mark.parametrize("exercise_id", IDS)
def test_both_sides_of_the_range_are_explained(exercise_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    entry = ENTRIES[exercise_id]
    width = entry["high"] - entry["low"]
    assert check_measured(exercise_id, entry["high"] + width + 1.0) is False
    assert "too high" in capsys.readouterr().out
    assert check_measured(exercise_id, entry["low"] - width - 1.0) is False
    assert "too low" in capsys.readouterr().out


def test_measured_range_rule() -> None:
    assert measured_range([1.0, 2.0, 3.0], 0.1) == pytest.approx((0.8, 3.2))
    assert measured_range([1.0, 2.0, 3.0], 0.0) == (1.0, 3.0)
    assert measured_range([0.1, 0.2, 0.3], 5.0, floor=0.0, ceiling=1.0) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: measured_range([1.0, 2.0], 0.1), ValueError, "seed_values: expected at least 3 seeds, got 2"),
        (lambda: measured_range("123", 0.1), TypeError, "seed_values: expected a sequence of numbers, got str"),
        (lambda: measured_range([1.0, "2", 3.0], 0.1), TypeError, "seed_values[1]: expected"),
        (lambda: measured_range([1.0, math.nan, 3.0], 0.1), ValueError, "seed_values: expected finite numbers"),
        (lambda: measured_range([1.0, 2.0, 3.0], -0.1), ValueError, "margin: expected"),
        (lambda: measured_range([1.0, 2.0, 3.0], 0.1, floor=2.0, ceiling=1.0), ValueError, "floor: expected at most"),
        (lambda: measured_range([1.0, 2.0, 3.0], 0.1, floor=5.0), ValueError, "seed_values: expected values that meet"),
        (lambda: measured_range([1.0, 2.0, 3.0], 0.1, ceiling=0.0), ValueError, "seed_values: expected values that meet [floor, ceiling] = [None, 0.0]"),
        (lambda: measured_range([1.0, 2.0, 3.0], 0.1, floor=math.nan), ValueError, "floor: expected a number in"),
        (lambda: measured_range([1.0, 2.0, 3.0], 0.1, ceiling=math.inf), ValueError, "ceiling: expected a number in"),
        (lambda: measured_range([1.0, 2.0, 3.0], math.inf), ValueError, "margin: expected a number in [0, inf)"),
        (lambda: check_measured("99.9", 1.0), ValueError, "exercise_id: expected a known exercise"),
        (lambda: check_measured(5.4, 1.0), TypeError, "exercise_id: expected a str such as '05.2', got float"),
        (lambda: check_measured("05.1", 1.0), ValueError, "exercise_id: expected a run-it exercise"),
        (lambda: check("05.4", 1.0), ValueError, "exercise_id: expected an arithmetic exercise"),
        (lambda: check_measured("05.4", "0.07"), TypeError, "measured: expected"),
        (lambda: check_measured("05.4", True), TypeError, "measured: expected"),
        (lambda: check_measured("05.4", [0.07]), TypeError, "measured: expected"),
        (lambda: check_measured("05.4", math.nan), ValueError, "measured: expected a finite number, got nan"),
        (lambda: check_measured("05.4", torch.zeros(2)), ValueError, "measured: expected a single number, got a tensor of shape (2,)"),
    ],
)
def test_bad_input_is_named(call, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        call()
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("answer", "error", "message"),
    [
        ([True, False], TypeError, "answer[0]: expected a real number"),
        (True, TypeError, "answer: expected a number, a sequence of numbers, a real tensor/array or a string, got bool"),
        (b"12", TypeError, "answer: expected a number, a sequence of numbers, a real tensor/array or a string, got bytes"),
        (["1", "2"], TypeError, "answer[0]: expected a real number"),
        ([[1.0, 2.0], [3.0]], ValueError, "answer: expected finite numbers in nested lists of one shape"),
        ([], ValueError, "answer: expected at least one number, got an empty sequence"),
        (10**400, ValueError, "answer: expected a finite number, got an int too large for a float"),
        (torch.tensor([1 + 2j]), TypeError, "answer: expected a real (integer or floating-point) tensor or array, got dtype torch.complex64"),
        (torch.tensor([True]), TypeError, "answer: expected a real (integer or floating-point) tensor or array, got dtype torch.bool"),
        (np.array([1 + 2j]), TypeError, "answer: expected a real (integer or floating-point) tensor or array, got dtype complex128"),
    ],
)
def test_check_names_an_answer_of_the_wrong_type(answer: object, error: type, message: str) -> None:
    with pytest.raises(error) as caught:
        answer_digest(answer, 2)
    assert str(caught.value).startswith(message)
    assert answer_digest([[1.0, 2.0], [3.0, 4.0]], 2) == answer_digest(torch.tensor([1.0, 2.0, 3.0, 4.0]), 2)
