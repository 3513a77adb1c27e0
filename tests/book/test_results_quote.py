"""Chapter 16 quotes other chapters' results through ``Results.quote``: the value and its tolerance travel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tformer.book.results import Results


@pytest.fixture
def book(tmp_path: Path) -> Path:
    source = {"acc": {"value": 93.5, "tol": 2.0}, "steps": {"value": 150.0, "tol": None},
              "em.min": {"value": 25.0, "tol": 1.0}, "em.max": {"value": 44.3, "tol": 1.0},
              "em.runs": {"value": 3.0, "tol": None}}
    (tmp_path / "10_source.json").write_text(json.dumps(source))
    return tmp_path


def test_quote_records_the_value_with_the_source_tolerance(book: Path) -> None:
    summary = Results("16_summary", directory=book)
    assert summary.quote("tf_acc", "10_source", "acc") == 93.5
    assert summary.quote("tf_steps", "10_source", "steps") == 150.0
    assert summary.entries == {"tf_acc": {"value": 93.5, "tol": 2.0}, "tf_steps": {"value": 150.0, "tol": None}}


def test_quote_range_and_runs(book: Path) -> None:
    summary = Results("16_summary", directory=book)
    assert summary.quote_range("em", "10_source", "em") == (25.0, 44.3)
    assert set(summary.entries) == {"em.min", "em.max"}
    assert summary.runs("10_source", "em") == 3


def test_a_missing_chapter_or_key_is_named(book: Path) -> None:
    summary = Results("16_summary", directory=book)
    with pytest.raises(FileNotFoundError, match="run chapter 11_missing first"):
        summary.quote("x", "11_missing", "acc")
    with pytest.raises(KeyError, match="records no result 'nope'"):
        summary.quote("x", "10_source", "nope")
    assert summary.entries == {}
