"""The translation measurements the book ships (chapter 11, §4) are internally consistent.

``tformer/book/benchmarks/hsk_translation.json`` is written by ``benchmarks/hsk_translation.py``. Its summary table
must be what its per-seed runs say, every arm must have run the same seeds for the same measured budget, and the
stored test translations must give the recorded BLEU when sacrebleu scores them here.
"""

from __future__ import annotations

import itertools
import json
import math
from importlib import resources

import pytest
import sacrebleu

TRAINED = ("baseline", "bpe", "smoothing", "dropout", "tied", "noam", "rnn")
DERIVED = ("averaged", "early_stop")


@pytest.fixture(scope="module")
def shipped() -> dict:
    path = resources.files("tformer.book.benchmarks") / "hsk_translation.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_arm_ran_every_seed(shipped: dict) -> None:
    seeds = shipped["settings"]["seeds"]
    assert seeds == [0, 1, 2]
    assert set(shipped["table"]) == set(TRAINED) | set(DERIVED)
    for arm in TRAINED:
        assert [r["seed"] for r in shipped["runs"][arm]] == seeds, arm
        assert all(r["arm"] == arm for r in shipped["runs"][arm])
    for run in shipped["runs"]["baseline"]:
        assert set(run["derived"]) == set(DERIVED)


def test_budgets_are_equal_within_five_percent(shipped: dict) -> None:
    budget = shipped["settings"]["budget_cpu_s"]
    assert 30 <= budget <= 90
    for arm in TRAINED:
        for run in shipped["runs"][arm]:
            assert budget <= run["train_cpu_s"] <= 1.05 * budget, (arm, run["seed"], run["train_cpu_s"])
            assert run["steps"] > 0 and run["curve"][-1]["step"] == run["steps"]


@pytest.mark.parametrize("arm", TRAINED + DERIVED)
def test_summary_is_the_mean_and_range_of_the_seeds(arm: str, shipped: dict) -> None:
    row = shipped["table"][arm]
    if arm in DERIVED:
        runs = [r["derived"][arm] for r in shipped["runs"]["baseline"]]
    else:
        runs = shipped["runs"][arm]
        assert row["steps"]["runs"] == [r["steps"] for r in runs]
    for metric in ("validation_bleu", "test_bleu"):
        values = [r[metric] for r in runs]
        assert row[metric]["runs"] == values
        assert row[metric]["min"] == min(values) and row[metric]["max"] == max(values)
        assert math.isclose(row[metric]["mean"], sum(values) / len(values), abs_tol=1e-3)
        assert all(0 <= v <= 100 for v in values)


def test_curves_are_ordered_and_end_with_the_final_model(shipped: dict) -> None:
    evaluations = shipped["settings"]["evaluations"]
    for arm in TRAINED:
        for run in shipped["runs"][arm]:
            curve = run["curve"]
            assert evaluations - 1 <= len(curve) <= evaluations + 1, (arm, len(curve))
            assert all(a["step"] < b["step"] and a["seconds"] < b["seconds"] for a, b in itertools.pairwise(curve))
            assert curve[-1]["validation_bleu"] == run["validation_bleu"]
    overfit = shipped["overfit"]["curve"]
    assert overfit[-1]["seconds"] > 2 * shipped["settings"]["budget_cpu_s"]  # the long run for the plot


def test_stored_translations_give_the_recorded_bleu(shipped: dict) -> None:
    # recomputed here with sacrebleu from the stored hypotheses and references: a changed file or scorer fails
    refs = shipped["test_references"]
    assert len(refs) == len(shipped["test_sources"]) == shipped["data"]["test"] == 400
    for arm in TRAINED:
        run = shipped["runs"][arm][0]
        score = sacrebleu.BLEU(tokenize="zh").corpus_score(run["test_hypotheses"], [refs])
        assert abs(score.score - run["test_bleu"]) < 0.01, (arm, score.score, run["test_bleu"])
    scorer = sacrebleu.BLEU(tokenize="zh")
    scorer.corpus_score(refs[:1], [refs[:1]])
    # every field of the signature but sacrebleu's version (pinned in requirements.txt, not in pyproject)
    fields = lambda sig: [f for f in sig.split("|") if not f.startswith("version:")]  # noqa: E731
    assert fields(shipped["sacrebleu_signature"]) == fields(str(scorer.get_signature()))
    assert "tok:zh" in shipped["sacrebleu_signature"]
