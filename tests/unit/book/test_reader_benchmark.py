"""The reading-tagger measurements the book ships (chapter 11, §4) are internally consistent.

``tformer/book/benchmarks/hsk_reader.json`` is written by ``benchmarks/hsk_reader.py``: every arm must have run
the same seeds for the same number of steps, every score must be a possible one on the validation split's
polyphones, no run may have read the test split (the chapter scores its shipped tagger there once), and the
chosen arm must be the one the rule picks on validation (the best worst seed), within 120 s of training per seed.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from importlib import resources
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def shipped() -> dict:
    path = resources.files("tformer.book.benchmarks") / "hsk_reader.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_arm_ran_every_seed_for_the_same_steps(shipped: dict) -> None:
    settings = shipped["settings"]
    arms = {"rope_pairs_conv", "rope_pairs", "rope_conv", "rope", "sinusoidal"}
    assert settings["seeds"] == [0, 1, 2] and set(settings["arms"]) == set(shipped["runs"]) == arms
    assert settings["chosen"] in settings["arms"] and settings["steps"] > 0
    for arm, runs in shipped["runs"].items():
        assert [r["seed"] for r in runs] == settings["seeds"], arm
        assert all(r["steps"] == settings["steps"] and r["train_seconds"] > 0 for r in runs), arm


def test_scores_are_percentages_and_errors_match_them(shipped: dict) -> None:
    assert shipped["settings"]["scored_on"] == ["validation"]
    for runs in shipped["runs"].values():
        for run in runs:
            assert "test" not in run, run  # the test split is the chapter's, scored once
            found = run["validation"]
            assert 0 <= found["polyphone_accuracy"] <= 100 and 0 <= found["accuracy"] <= 100
            # errors = (1 - accuracy) * polyphones, with several hundred polyphones in the split
            share = found["polyphone_errors"] / (100 - found["polyphone_accuracy"]) * 100
            assert 700 <= share <= 1200, found


def test_the_chosen_arm_is_the_rule_s_choice_on_validation(shipped: dict, script) -> None:
    chosen = shipped["settings"]["chosen"]
    assert chosen == script.choose(shipped["runs"])
    for run in shipped["runs"][chosen]:
        assert run["train_seconds"] <= 120, run


def test_each_control_differs_from_its_arm_in_one_setting(shipped: dict) -> None:
    arms = shipped["settings"]["arms"]
    pairs = [("rope_pairs_conv", "rope_pairs", "conv"), ("rope_pairs_conv", "rope_conv", "pairs"),
             ("rope_pairs", "rope", "pairs"), ("rope_conv", "rope", "conv"), ("rope", "sinusoidal", "positional")]
    for arm, control, setting in pairs:
        assert {k for k in arms[arm] if arms[arm][k] != arms[control][k]} == {setting}, (arm, control)


@pytest.fixture(scope="module")
def script():
    """``benchmarks/hsk_reader.py``, imported as a module (it is not part of the package)."""
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "hsk_reader.py"
    spec = importlib.util.spec_from_file_location("hsk_reader_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_file_ran_the_script_s_arms(shipped: dict, script) -> None:
    """An edit to the benchmark's arms (or to the chapter's step count) without a re-run fails here."""
    module = script
    assert shipped["settings"]["arms"] == module.ARMS and shipped["settings"]["seeds"] == list(module.SEEDS)
    chapter = module.NOTEBOOK.read_text(encoding="utf-8")
    assert f'READ_STEPS = results.record("read_steps", {shipped["settings"]["steps"]})' in chapter


def test_the_file_ran_the_chapter_s_current_cells(shipped: dict, script) -> None:
    """An edit to the chapter's code up to ``read_aloud`` without a re-run of the benchmark fails here."""
    module = script
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if shipped["python"] != here:  # a syntax tree's dump differs between Python versions
        pytest.skip(f"the digest was made with Python {shipped['python']}, this is {here}")
    cells = module.chapter_cells()
    assert "def read_aloud(" in cells[-1] and "def read_aloud(" not in "".join(cells[:-1])
    assert shipped["cells_sha256"] == module.cells_digest(cells), "re-run benchmarks/hsk_reader.py"
    # comments and layout do not count, code does
    assert module.cells_digest([c + "\n# a comment" for c in cells]) == shipped["cells_sha256"]
    assert module.cells_digest([*cells[:-1], cells[-1] + "\nREAD_STEPS = 1"]) != shipped["cells_sha256"]
