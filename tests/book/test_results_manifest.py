"""Every number the prose quotes with a ``<!-- result: key -->`` marker matches what its notebook computed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tformer.book.results import MARKER, WRITE_ENV, Results, below, prose_tolerance

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def prose_numbers(py: Path) -> list[tuple[str, str]]:
    """(key, number as printed) for every marker in the markdown cells of a notebook source."""
    import jupytext

    return [
        (m["key"], m["number"])
        for cell in jupytext.read(py).cells
        if cell.cell_type == "markdown"
        for m in MARKER.finditer(cell.source)
    ]


def mismatches(py: Path, manifest: dict[str, dict]) -> list[str]:
    """Messages naming the chapter, the key, the prose value and the computed value for each disagreement."""
    found = []
    for key, printed in prose_numbers(py):
        if key not in manifest:
            found.append(f"{py.stem}: prose quotes {printed} as {key!r}, but the notebook records no such result")
            continue
        prose = float(printed.replace(",", "").replace("−", "-"))
        computed = manifest[key]["value"]
        tol = manifest[key]["tol"] if manifest[key]["tol"] is not None else prose_tolerance(printed.replace(",", ""))
        if abs(prose - computed) > tol + 1e-12:
            found.append(f"{py.stem}: {key}: prose says {printed}, notebook computed {computed} (tolerance {tol:g})")
    return found


def chapters() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("py", chapters(), ids=lambda p: p.stem)
def test_prose_numbers_match_the_manifest(py: Path) -> None:
    path = NOTEBOOKS / "results" / f"{py.stem}.json"
    manifest = json.loads(path.read_text()) if path.exists() else {}
    assert mismatches(py, manifest) == []


def test_a_changed_prose_number_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WRITE_ENV, "1")
    results = Results("99_demo", directory=tmp_path)
    results.record("output_1", 1.2408)
    results.record("accuracy", 99.31, tol=0.5)
    manifest = json.loads(results.path.read_text())
    good = tmp_path / "99_demo.py"
    good.write_text(
        "# %% [markdown]\n# The output is **1.2408**<!-- result: output_1 --> and the model reaches "
        "99.5%<!-- result: accuracy -->.\n"
    )
    assert mismatches(good, manifest) == []
    bad = tmp_path / "99_bad.py"
    bad.write_text("# %% [markdown]\n# The output is **1.25**<!-- result: output_1 -->.\n")
    assert mismatches(bad, manifest) == ["99_bad: output_1: prose says 1.25, notebook computed 1.2408 (tolerance 0.005)"]


def test_prose_tolerance_is_half_the_last_digit() -> None:
    assert prose_tolerance("0.8507") == pytest.approx(5e-5)
    assert prose_tolerance("1050624") == 0.5
    assert prose_tolerance("2.5e-3") == pytest.approx(5e-5)


def test_record_rejects_bad_values(tmp_path: Path) -> None:
    results = Results("99_demo", directory=tmp_path)
    with pytest.raises(ValueError, match="finite"):
        results.record("x", float("nan"))
    with pytest.raises(TypeError, match="value"):
        results.record("x", "high")
    with pytest.raises(ValueError, match="key"):
        results.record("bad key", 1.0)
    with pytest.raises(ValueError, match="chapter"):
        Results("../escape")


def test_a_rerun_never_hides_a_key_another_chapter_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WRITE_ENV, "1")
    first = Results("10_demo", directory=tmp_path)
    first.record("test_em", 99.7, tol=1.0)
    first.record("bleu", 99.9, tol=1.0)
    rerun = Results("10_demo", directory=tmp_path)  # the same chapter, executing again (make sync)
    rerun.record("test_em", 99.5, tol=1.0)
    manifest = json.loads(rerun.path.read_text())
    assert manifest["test_em"]["value"] == 99.5
    assert manifest["bleu"]["value"] == 99.9  # not recorded yet in this run, still readable


def test_record_writes_the_manifest_only_under_sync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WRITE_ENV, raising=False)
    results = Results("99_demo", directory=tmp_path)
    assert results.record("x", 1.5) == 1.5
    assert not results.path.exists()  # nbval and JupyterLab runs leave the committed manifest alone
    assert results.entries == {"x": {"value": 1.5, "tol": None}}
    monkeypatch.setenv(WRITE_ENV, "1")
    results.record("y", 2.0)
    assert json.loads(results.path.read_text()) == {"x": {"value": 1.5, "tol": None}, "y": {"value": 2.0, "tol": None}}


def test_below_prints_the_bound_and_refuses_a_value_over_it() -> None:
    assert below(3.1e-15, 1e-12) == "< 1e-12"
    assert below(-2.7e-7, 1e-5) == "< 1e-5"
    with pytest.raises(ValueError, match=r"value: expected \|value\| < 1e-12, got 2e-12"):
        below(2e-12, 1e-12)
    with pytest.raises(ValueError, match="value"):
        below(float("nan"), 1.0)
    with pytest.raises(ValueError, match="limit: expected a positive number"):
        below(0.0, 0.0)
    with pytest.raises(TypeError, match="value, limit"):
        below("small", 1e-12)  # type: ignore[arg-type]
