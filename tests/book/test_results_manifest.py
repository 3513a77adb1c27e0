"""The results check can fail: every quoted number is marked, parsed, recorded and printed by one run.

Five rules, each shown failing on a tiny notebook below and then applied to every chapter:

1. every ``<!-- result: key -->`` marker attaches to a number (after ``]``, ``)``, ``%``, ``×`` or emphasis
   too) and that number matches the manifest within the record's tolerance;
2. a number next to a unit (``%``, ``×``, ``nats``, ``steps``, ``s``, ``ms``, ``MiB``, ``bytes``,
   ``parameters``, ``BLEU``, ``points``) carries a marker, unless the allow-list below names it with a reason;
3. every tolerance in a manifest obeys the rule of :mod:`tformer.book.results` (``0 < tol < |value|`` and at
   most ``MAX_RELATIVE_TOL`` of it);
4. the manifest was written by the run that stored the notebook's outputs (the outputs' digest matches);
5. every recorded value is printed in those outputs, to the precision printed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tformer.book.results import (
    DIGEST_KEY,
    MAX_RELATIVE_TOL,
    NUMBER,
    WRITE_ENV,
    Results,
    below,
    check_tolerance,
    outputs_digest,
    parse_markers,
    prose_tolerance,
)

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

# ---------------------------------------------------------------------------------------------------------------
# Rule 1: markers parse and match.


def markdown_cells(py: Path) -> list[str]:
    """The source of every markdown cell of a percent-format notebook source."""
    import jupytext

    return [cell.source for cell in jupytext.read(py).cells if cell.cell_type == "markdown"]


def mismatches(py: Path, manifest: dict[str, dict]) -> list[str]:
    """One message per marker that cannot be parsed, names no recorded key, or disagrees with the manifest."""
    found = []
    for text in markdown_cells(py):
        for marker in parse_markers(text):
            where = f"{py.stem}: {marker.key!r} after ...{marker.context[-40:]!r}"
            if marker.problem:
                found.append(f"{where}: cannot parse the marker: {marker.problem}")
                continue
            if marker.key not in manifest:
                found.append(f"{py.stem}: prose quotes {marker.number} as {marker.key!r}, "
                             "but the notebook records no such result")
                continue
            computed = manifest[marker.key]["value"]
            # The prose shows the value of the run that wrote the manifest and the stored outputs, to the prose's
            # own digits, run-dependent or not: a record's band says how far *another* run may land, and a
            # stale number inside it is still not what this run printed.
            tol = prose_tolerance(marker.number)
            if abs(marker.value - computed) > tol + 1e-12:
                found.append(f"{py.stem}: {marker.key}: prose says {marker.number}, notebook computed {computed} "
                             f"(tolerance {tol:g}; tools/prose_numbers.py {py.stem} rewrites the digits)")
    return found


# ---------------------------------------------------------------------------------------------------------------
# Rule 2: no quoted number without a marker.
#
# Scanned: markdown cells, after blanking inline code (`...`) and LaTeX ($...$, $$...$$), whose numbers are
# formula constants (√d_k, 4D² + 4D, 10000^(2i/D)), and text in double quotes ("...", “...”), which quotes a
# seed, a paper or folklore verbatim and is what the chapter then tests. A number is "quoted" if it is
# directly followed by % or × (a ratio: "4×"; "16 × 16" with spaces is a product, not a claim), or by a space
# and a unit: nats, bits, s, ms, µs, seconds, MiB, GiB, KiB, MB, GB, bytes, BLEU, points, or (with at most one
# word between, "1.7 Transformer steps", "65 million parameters") steps or parameters.
QUOTED = re.compile(
    rf"(?P<number>{NUMBER})(?:\*\*)?(?:%|×|\s(?:(?:[A-Za-z][\w-]*|M)\s)?(?:steps?|parameters)\b"
    r"|\s(?:nats?|bits|s|ms|µs|seconds|MiB|GiB|KiB|MB|GB|bytes|BLEU|points)\b)"
)
_NOT_PROSE = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$|`[^`\n]+`|\"[^\"\n]*\"|“[^”\n]*”", re.S)

# (chapter, the flagged text as matched, newlines as spaces) -> why it is not a measured result.
ALLOWED: dict[tuple[str, str], str] = {
    ("17_small_gpt", "150 s"): "setting: the training budget of the chapter's run",
    ("17_small_gpt", "150 seconds"): "setting: the training budget of the chapter's run",
    ("17_small_gpt", "15 points"): "setting: the assertion's threshold",
    ("17_small_gpt", "5%"): "setting: the chapter's warm-up share (tformer.book.poet.WARMUP)",
    ("17_small_gpt", "100 steps"): "setting: nanoGPT's warm-up iterations",
    ("17_small_gpt", "100 warm-up steps"): "setting: nanoGPT's warm-up iterations",
    ("17_small_gpt", "30%"): "setting: the assertion's threshold",
    ("01_rnn_baselines", "7 steps"): "setting: the length of the test sequence the code builds",
    ("01_rnn_baselines", "100 steps"): "setting: T = 100 of the gradient sweep",
    ("01_rnn_baselines", "1%"): "definition: the same 100× threshold, in the exercise",
    ("01_rnn_baselines", "25%"): "constant: chance with 4 keys",
    ("01_rnn_baselines", "400 steps"): "setting: the recall task's training budget",
    ("01_rnn_baselines", "4×"): "structure: 4 gate blocks, parameter counts asserted in code",
    ("01_rnn_baselines", "3×"): "structure: 3 gate blocks, parameter counts asserted in code",
    ("01_rnn_baselines", "90%"): "setting: the assertion's threshold",
    ("02_seq2seq_bottleneck", "200 steps"): "setting: the translation models' training budget",
    ("02_seq2seq_bottleneck", "300 steps"): "setting: the digit reverser's training budget (exercises)",
    ("02_seq2seq_bottleneck", "140 bits"): "derivation: 20 · log₂ 126 in the worked answer",
    ("02_seq2seq_bottleneck", "4,096 bits"): "derivation: 128 float32 numbers (exercise 02.4)",
    ("03_attention_weighted_average", "20%"): "example input: the course-grade weights",
    ("03_attention_weighted_average", "30%"): "example input: the course-grade weights",
    ("03_attention_weighted_average", "50%"): "example input: the course-grade weights",
    ("05_hand_calculation", "10%"): "setting: the assertion's threshold",
    ("05_hand_calculation", "16 nats"): "formula: ln 16 is the entropy of a uniform 16-way choice",
    ("07_multi_head_attention", "400 steps"): "setting: the training budget",
    ("07_multi_head_attention", "800 steps"): "setting: the one-head control's longer budget",
    ("08_positional_encoding", "400 steps"): "setting: the training budget",
    ("08_positional_encoding", "1600 steps"): "setting: the 8-head ALiBi arm's budget",
    ("09_transformer_block", "65 million parameters"): "paper: Vaswani et al. 2017, Table 3",
    ("09_transformer_block", "65 M parameters"): "paper: Vaswani et al. 2017, Table 3",
    ("09_transformer_block", "4,000 warm-up steps"): "paper: Vaswani et al. 2017, §5.3",
    ("09_transformer_block", "1.05 M parameters"): "the seed article's claim, which the chapter then computes",
    ("09_transformer_block", "50 steps"): "setting: the no-residual arm's budget, the checkpoint compared",
    ("09_transformer_block", "25 steps"): "setting: how often the depth experiment reads held-out accuracy",
    ("09_transformer_block", "99%"): "definition: the threshold that steps_pre and steps_post count to",
    ("10_encoder_decoder", "50 steps"): "setting: the averaging window of final_loss",
    ("11_real_sentences", "5%"): "setting: the smallest label fraction (FRACTIONS); also the warm-up fraction",
    ("11_real_sentences", "100%"): "setting: all the labels (FRACTIONS); and a perfect score, in prose",
    ("12_three_families", "15%"): "paper: BERT's masking rate (Devlin et al. 2019, §3.1), also the code's",
    ("12_three_families", "2.0 nats"): "exercise: the loss exercise 12.2 gives the reader to convert",
    ("12_three_families", "300 steps"): "setting: the two stretches of the loss the code compares (losses[-600:-300], losses[-300:])",
    ("10_encoder_decoder", "2.30 nats"): "formula: ln 10, a uniform guess among ten digits (10's Why? answer)",
    ("10_encoder_decoder", "1.97 nats"): "formula: (6 · ln 10 + 0) / 7, the blind reverser's floor (10's Why? answer)",
    ("12_three_families", "80%"): "paper: BERT's 80/10/10 rule (Devlin et al. 2019, §3.1)",
    ("12_three_families", "30%"): "setting: p = 0.3 in the worked standard error √(0.3 × 0.7 / 400), near the study's accuracies",
    ("12_three_families", "10%"): "paper: BERT's 80/10/10 rule; setting: the warm-up fraction",
    ("13_complexity", "4×"): "formula: (2048/1024)², the quadratic law the marked counts show",
    ("13_complexity", "16×"): "formula: (4096/1024)²",
    ("13_complexity", "1 steps"): "formula: n − 1 steps",
    ("13_complexity", "1 recurrent steps"): "formula: n − 1 steps",
    ("14_new_problems", "8×"): "setting: 8 experts",
    ("14_new_problems", "2×"): "setting: top-2 routing",
    ("14_new_problems", "1000 dependent steps"): "setting: the scan's length n = 1000",
    ("14_new_problems", "5%"): "paper: GQA uptraining with 5% of the original pre-training compute (Ainslie et al. 2023, §2.1)",
    ("14_new_problems", "20 steps"): "setting: EVAL_EVERY_R, the race's evaluation interval",
    ("15_parallelism", "2 bytes"): "paper: Rajbhandari et al. 2020, §3.1: fp16 weight and gradient, 2 bytes each",
    ("15_parallelism", "12 bytes"): "paper: Rajbhandari et al. 2020, §3.1: K = 12 bytes of fp32 Adam state",
    ("15_parallelism", "16 bytes"): "paper: Rajbhandari et al. 2020, §3.1: 2 + 2 + 12 bytes per parameter",
    ("15_parallelism", "80 GB"): "setting: DEVICE_GB, the accelerator size of the strategy table",
    ("16_summary", "32 steps"): "setting: 32 positions",
    ("16_summary", "100×"): "definition: chapter 01's steps_* threshold",
    ("16_summary", "4×"): "structure: 4 gate blocks (the marked lstm_ratio)",
    ("16_summary", "3×"): "structure: 3 gate blocks (the marked gru_ratio)",
    ("16_summary", "99%"): "definition: the held-out threshold that chapter 09's steps_pre counts to",
}


def flagged_numbers(py: Path) -> list[tuple[str, str]]:
    """(flagged text, its context) for every number next to a unit in the prose of ``py`` without a marker."""
    found = []
    for text in markdown_cells(py):
        prose = _NOT_PROSE.sub(lambda m: " " * len(m.group()), text)
        marked = {marker.start for marker in parse_markers(prose)}
        for match in QUOTED.finditer(prose):
            if match.start() not in marked:
                context = " ".join(text[max(0, match.start() - 50):match.end() + 20].split())
                found.append((" ".join(match.group().split()), context))
    return found


def unmarked_numbers(py: Path, allowed: dict[tuple[str, str], str]) -> list[str]:
    """One message per flagged number of ``py`` (:func:`flagged_numbers`) that ``allowed`` does not name."""
    return [f"{py.stem}: {flagged!r} has no result marker: ...{context}..."
            for flagged, context in flagged_numbers(py) if (py.stem, flagged) not in allowed]


# ---------------------------------------------------------------------------------------------------------------
# Rules 3-5: tolerances, one run, printed values.


def tolerance_violations(stem: str, manifest: dict[str, dict]) -> list[str]:
    """One message per manifest entry whose tolerance breaks the rule of :func:`check_tolerance`."""
    found = []
    for key, entry in records(manifest).items():
        try:
            check_tolerance(key, entry["value"], entry["tol"])
        except ValueError as error:
            found.append(f"{stem}: {error}")
    return found


def records(manifest: dict) -> dict[str, dict]:
    """The manifest's records, without the run's stamp."""
    return {key: entry for key, entry in manifest.items() if key != DIGEST_KEY}


def stamp_problem(stem: str, manifest: dict, notebook: dict) -> list[str]:
    """A message if the manifest was not written by the run whose outputs ``notebook`` stores."""
    stamp = manifest.get(DIGEST_KEY)
    if stamp == outputs_digest(notebook):
        return []
    what = "carries no stamp" if stamp is None else "was stamped by another run"
    return [f"{stem}: the manifest {what}: `git restore notebooks/{stem}.ipynb` if you only ran the chapter in "
            f"JupyterLab; after an edit, re-run `make sync NB=notebooks/{stem}.py` so one run writes both"]


def printed_numbers(notebook: dict) -> set[str]:
    """Every number in the text of the notebook's stored code-cell outputs (stream and text/plain)."""
    numbers = set()
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            text = "".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))
            numbers.update(m.group() for m in re.finditer(NUMBER, text))
    return numbers


def shows(value: float, printed: str) -> bool:
    """True if ``printed`` is ``value`` written to ``printed``'s own precision ("8.8" shows 8.77, "9.0" not).

    A one-significant-digit print ("0.5", "3") shows only a value that equals it exactly, so a stray "1" in
    an output does not vouch for 0.97. A percentage may be printed as a fraction with at least two decimals
    ("0.953" and "0.95" show 95.3; "1.0" is too coarse to show a percentage).
    """
    as_fraction = "." in printed and len(printed.rsplit(".", 1)[1]) >= 2
    return _shows(value, printed) or (abs(value) <= 100 and as_fraction and _shows(value / 100, printed))


def _shows(value: float, printed: str) -> bool:
    text = printed.replace(",", "").replace("−", "-").lstrip("+")
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    if float(text) == value:
        return True
    if exponent:
        return f"{value:.{decimals}e}" == f"{float(text):.{decimals}e}"
    significant = len(mantissa.lstrip("-").replace(".", "").lstrip("0"))
    return significant >= 2 and f"{value:.{decimals}f}" == mantissa


def unprinted(stem: str, manifest: dict, notebook: dict) -> list[str]:
    """One message per recorded value that no stored output of the notebook prints."""
    numbers = printed_numbers(notebook)
    return [f"{stem}: {key} = {entry['value']} is recorded but never printed in the stored outputs"
            for key, entry in records(manifest).items() if not any(shows(entry["value"], n) for n in numbers)]


# ---------------------------------------------------------------------------------------------------------------
# The book.


def chapters() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def manifest_of(py: Path) -> dict:
    path = NOTEBOOKS / "results" / f"{py.stem}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def notebook_of(py: Path) -> dict:
    return json.loads(py.with_suffix(".ipynb").read_text(encoding="utf-8"))


@pytest.mark.parametrize("py", chapters(), ids=lambda p: p.stem)
def test_prose_numbers_match_the_manifest(py: Path) -> None:
    assert mismatches(py, manifest_of(py)) == []


@pytest.mark.parametrize("py", chapters(), ids=lambda p: p.stem)
def test_every_quoted_number_carries_a_marker(py: Path) -> None:
    assert unmarked_numbers(py, ALLOWED) == []


def test_every_allow_list_entry_is_still_needed() -> None:
    flagged = {(py.stem, text) for py in chapters() for text, _ in flagged_numbers(py)}
    assert [entry for entry in ALLOWED if entry not in flagged] == []


@pytest.mark.parametrize("py", chapters(), ids=lambda p: p.stem)
def test_manifest_tolerances_follow_the_rule(py: Path) -> None:
    assert tolerance_violations(py.stem, manifest_of(py)) == []


@pytest.mark.parametrize("py", [p for p in chapters() if manifest_of(p)], ids=lambda p: p.stem)
def test_manifest_and_outputs_come_from_one_run(py: Path) -> None:
    assert stamp_problem(py.stem, manifest_of(py), notebook_of(py)) == []


@pytest.mark.parametrize("py", [p for p in chapters() if manifest_of(p)], ids=lambda p: p.stem)
def test_every_recorded_value_is_printed(py: Path) -> None:
    assert unprinted(py.stem, manifest_of(py), notebook_of(py)) == []


# ---------------------------------------------------------------------------------------------------------------
# Each rule fails on a tiny notebook.


def tiny(tmp_path: Path, name: str, markdown: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text("# %% [markdown]\n" + "".join(f"# {line}\n" for line in markdown.splitlines()))
    return path


def test_a_changed_prose_number_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WRITE_ENV, "1")
    results = Results("99_demo", directory=tmp_path)
    results.record("output_1", 1.2408)
    results.record("accuracy", 99.31, tol=0.5)
    manifest = json.loads(results.path.read_text())
    good = tiny(tmp_path, "99_demo", "The output is **1.2408**<!-- result: output_1 --> and the model reaches "
                "99.3%<!-- result: accuracy -->.")
    assert mismatches(good, manifest) == []
    bad = tiny(tmp_path, "99_bad", "The output is **1.25**<!-- result: output_1 -->.")
    hint = "tools/prose_numbers.py 99_bad rewrites the digits"
    assert mismatches(bad, manifest) == [f"99_bad: output_1: prose says 1.25, notebook computed 1.2408 (tolerance 0.005; {hint})"]
    # inside the run band (0.5) but not what this run printed: a drifted number
    stale = tiny(tmp_path, "99_stale", "The model reaches 99.5%<!-- result: accuracy -->.")
    assert len(mismatches(stale, manifest)) == 1


def test_markers_after_brackets_and_in_lists_are_parsed_and_checked(tmp_path: Path) -> None:
    manifest = {"out_0": {"value": 0.8507, "tol": None}, "out_1": {"value": 1.2408, "tol": None},
                "w1": {"value": 0.1192, "tol": None}}
    good = tiny(tmp_path, "99_good", "**[0.8507**<!-- result: out_0 -->, **1.2408]**<!-- result: out_1 -->, "
                "(w = 0.1192)<!-- result: w1 -->")
    assert mismatches(good, manifest) == []
    bad = tiny(tmp_path, "99_bad", "The correct output is **[0.85, 1.25]**<!-- result: out_1 -->.")
    assert [m.split(" (")[0] for m in mismatches(bad, manifest)] == [
        "99_bad: out_1: prose says 1.25, notebook computed 1.2408"]


def test_markers_inside_a_measured_block_are_checked(tmp_path: Path) -> None:
    """A collapsed "How this was measured" block is prose like any other: its numbers are checked too."""
    manifest = {"acc.min": {"value": 81.4, "tol": None}, "acc.max": {"value": 85.3, "tol": None}}
    block = ('<details class="measured"><summary>How this was measured</summary>\n\nOver three seeds, '
             "**{lo}%**<!-- result: acc.min -->–**85.3%**<!-- result: acc.max -->.\n\n</details>")
    good = tiny(tmp_path, "99_good", block.format(lo="81.4"))
    assert [m.key for m in parse_markers(good.read_text())] == ["acc.min", "acc.max"]
    assert mismatches(good, manifest) == []
    bad = tiny(tmp_path, "99_bad", block.format(lo="81.9"))
    assert [m.split(" (")[0] for m in mismatches(bad, manifest)] == [
        "99_bad: acc.min: prose says 81.9, notebook computed 81.4"]


def test_a_marker_without_a_number_or_with_a_bad_key_fails(tmp_path: Path) -> None:
    bad = tiny(tmp_path, "99_bad", "It is large<!-- result: out_0 --> and 3.5 <!-- result: out 1 -->.")
    assert mismatches(bad, {"out_0": {"value": 1.0, "tol": None}}) == [
        "99_bad: 'out_0' after ...'It is large': cannot parse the marker: no number directly before the marker",
        "99_bad: 'out 1' after ...' and 3.5 ': cannot parse the marker: key: expected letters, digits, '_', "
        "'.' or '-', got 'out 1'",
    ]


def test_a_number_with_a_unit_and_no_marker_fails(tmp_path: Path) -> None:
    py = tiny(tmp_path, "99_demo", "The GRU reaches 94.75%<!-- result: em -->, about 5× faster, after "
              "1.7 Transformer steps,\nat 0.86 nats, in 12 ms; `512 × 64` and $\\sqrt{64}$ and 16 × 16 "
              'and the "4× the compute" seed are not claims.')
    found = unmarked_numbers(py, {})
    assert [line.split(" has no")[0] for line in found] == [
        "99_demo: '5×'", "99_demo: '1.7 Transformer steps'", "99_demo: '0.86 nats'", "99_demo: '12 ms'"]
    assert unmarked_numbers(py, {("99_demo", t): "test" for t in ["5×", "1.7 Transformer steps", "0.86 nats",
                                                                  "12 ms"]}) == []


def test_a_tolerance_as_wide_as_the_value_is_refused(tmp_path: Path) -> None:
    results = Results("99_demo", directory=tmp_path)
    results.record("speedup", 8.77, tol=0.8)
    results.record("exact", 0.0)
    with pytest.raises(ValueError, match=r"tol: expected 0 < tol <= 10% of \|value\| = 0.877 for 'kv' .*got 8.77"):
        results.record("kv", 8.77, tol=8.77)
    with pytest.raises(ValueError, match="tol: expected"):
        results.record("acc", 93.5, tol=10.0)  # ±10 points lets a stale 95% pass against 93.5
    with pytest.raises(ValueError, match="tol: expected"):
        results.record("final_loss", 0.00036, tol=0.01)
    with pytest.raises(ValueError, match="tol: expected"):
        results.record("noise", 1e-16, tol=1e-12)  # rounding noise: print below(...) instead
    stored = {"kv_speedup": {"value": 8.77, "tol": 8.77}, "ok": {"value": 8.77, "tol": 0.5}, DIGEST_KEY: "x"}
    assert tolerance_violations("99_demo", stored) == [
        "99_demo: tol: expected 0 < tol <= 10% of |value| = 0.877 for 'kv_speedup' (value 8.77), got 8.77"]
    assert MAX_RELATIVE_TOL == 0.10


def test_record_runs_derives_the_band_from_the_spread(tmp_path: Path) -> None:
    results = Results("99_demo", directory=tmp_path)
    runs = results.record_runs("acc", [96.0, 97.0, 98.5])
    assert runs.mean == pytest.approx(97.1666666667) and runs.spread == pytest.approx(1.3333333333)
    assert str(runs) == "96–98.5 over 3 runs (mean 97.17)"
    assert str(results.record_runs("words", [36041.0, 36180.0, 36342.0])) == "36,041–36,342 over 3 runs (mean 36,188)"
    entries = results.entries
    assert entries["acc"] == {"value": pytest.approx(97.16666667), "tol": pytest.approx(1.3333333333)}
    assert entries["acc.min"] == {"value": 96.0, "tol": None} and entries["acc.max"] == {"value": 98.5, "tol": None}
    assert entries["acc.runs"] == {"value": 3.0, "tol": None}
    # RoPE at length 128 over five seeds: the runs disagree too much for one number, so only the range is recorded.
    wide = results.record_runs("rope_128", [69.0, 96.5, 99.7, 80.0, 91.0])
    assert not wide.quotable and "rope_128" not in results.entries and str(wide) == "69–99.7 over 5 runs"
    assert results.entries["rope_128.min"]["value"] == 69.0
    with pytest.raises(ValueError, match="values: expected at least 2 runs for 'one', got 1"):
        results.record_runs("one", [1.0])
    with pytest.raises(ValueError, match="tol: expected"):
        results.record_runs("noisy", [1.0, 1.01], tol=0.5)


def test_a_manifest_from_another_run_or_a_value_never_printed_fails() -> None:
    notebook = {"cells": [{"cell_type": "code", "source": "", "metadata": {},
                           "outputs": [{"output_type": "stream", "name": "stdout",
                                        "text": ["KV cache: 9.0× faster\n", "accuracy 93.5%, loss 0.00036\n"]}]}]}
    manifest = {"kv_speedup": {"value": 8.77, "tol": 0.5}, "acc": {"value": 93.5, "tol": 1.0},
                "loss": {"value": 0.00036, "tol": None}, DIGEST_KEY: outputs_digest(notebook)}
    assert stamp_problem("99_demo", manifest, notebook) == []
    assert unprinted("99_demo", manifest, notebook) == [
        "99_demo: kv_speedup = 8.77 is recorded but never printed in the stored outputs"]
    rerun = json.loads(json.dumps(notebook))
    rerun["cells"][0]["outputs"][0]["text"] = ["KV cache: 8.8× faster\n"]
    assert stamp_problem("99_demo", manifest, rerun) == [
        "99_demo: the manifest was stamped by another run: `git restore notebooks/99_demo.ipynb` if you only ran "
        "the chapter in JupyterLab; after an edit, re-run `make sync NB=notebooks/99_demo.py` so one run writes both"]
    assert shows(8.77, "8.8") and not shows(8.77, "9.0") and not shows(0.97, "1") and shows(0.5, "0.5")
    assert shows(1050624.0, "1,050,624") and shows(2.7e-07, "2.7e-07")
    assert shows(95.3, "0.953") and shows(95.3, "0.95") and not shows(95.3, "0.96") and not shows(95.3, "1.0")


def test_prose_tolerance_is_half_the_last_digit() -> None:
    assert prose_tolerance("0.8507") == pytest.approx(5e-5)
    assert prose_tolerance("1050624") == 0.5
    assert prose_tolerance("1,024") == 0.5
    assert prose_tolerance("2.5e-3") == pytest.approx(5e-5)


def test_record_rejects_bad_values(tmp_path: Path) -> None:
    results = Results("99_demo", directory=tmp_path)
    with pytest.raises(ValueError, match="finite"):
        results.record("x", float("nan"))
    with pytest.raises(TypeError, match="value"):
        results.record("x", "high")
    with pytest.raises(ValueError, match="key"):
        results.record("bad key", 1.0)
    with pytest.raises(ValueError, match="key"):
        results.record(DIGEST_KEY, 1.0)  # reserved for the run's stamp
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


def test_below_prints_the_limit_it_checked_not_a_rounded_one() -> None:
    assert below(1.2e-5, 1.4e-5) == "< 1.4e-5"  # "< 1e-5" would be false
    assert below(0.0, 0.1 * 5 * 1e-3) == "< 5e-4"  # float noise in a round limit still prints round
    with pytest.raises(ValueError, match=r"value: expected \|value\| < 1.4e-05, got 1.4e-05"):
        below(1.4e-5, 1.4e-5)
    with pytest.raises(ValueError, match=r"limit: expected a positive number \(finite\)"):
        below(0.0, float("inf"))


@pytest.mark.parametrize(("args", "kwargs", "error", "message"), [
    (("k", "1.5"), {}, TypeError, "value: expected a real number for 'k', got str"),
    (("k", b"1"), {}, TypeError, "value: expected a real number"),
    (("k", True), {}, TypeError, "value: expected a real number"),
    (("k", 10**400), {}, ValueError, "value: expected a finite number"),
    ((5, 1.0), {}, TypeError, "key: expected a str, got int"),
    (("k[0]", 1.0), {}, ValueError, "key: expected letters"),
    (("k[", 1.0), {}, ValueError, "key: expected letters"),
    (("k", 1.0), {"tol": True}, TypeError, "tol: expected None or a real number"),
    (("k", 1.0), {"tol": "0.1"}, TypeError, "tol: expected None or a real number"),
    (("k", 1.0), {"tol": float("nan")}, ValueError, "tol: expected a finite number"),
])
def test_record_refuses_bad_input_and_stores_nothing(args: tuple, kwargs: dict, error: type, message: str,
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setenv(WRITE_ENV, "1")
    results = Results("99_demo", directory=tmp_path)
    with pytest.raises(error, match=re.escape(message)):
        results.record(*args, **kwargs)
    with pytest.raises(TypeError, match="tol: expected None or a real number"):
        results.record("t", 1.0, tol=torch.tensor(0.01))  # a tensor tol would break every later write
    assert results.entries == {} and not results.path.exists()
    results.record("ok", 1.0, tol=np.float32(0.05))  # a NumPy tol is stored as a float (JSON can write it)
    assert type(results.entries["ok"]["tol"]) is float and json.loads(results.path.read_text())["ok"]["value"] == 1.0


def test_record_runs_refuses_a_str_and_a_bad_tol_before_storing(tmp_path: Path) -> None:
    results = Results("99_demo", directory=tmp_path)
    with pytest.raises(TypeError, match="values: expected an iterable of real numbers, got str"):
        results.record_runs("k", "123")
    with pytest.raises(TypeError, match=r"values\[1\]: expected a real number"):
        results.record_runs("k", [1.0, "2"])
    with pytest.raises(ValueError, match="tol: expected"):
        results.record_runs("k", [1.0, 100.0], tol=5.0)  # fits the max, not the min
    assert results.entries == {}
