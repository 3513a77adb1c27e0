"""tools/prose_check.py measures a chapter's main text and fails each rule on a tiny chapter written here."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import prose_check  # noqa: E402


def markdown(text: str) -> str:
    """One percent-format markdown cell holding ``text``."""
    return (
        "# %% [markdown]\n"
        + "\n".join(f"# {line}".rstrip() for line in text.strip("\n").splitlines())
        + "\n\n"
    )


def chapter(tmp_path: Path, name: str, *cells: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text("".join(cells) + "# %%\nx = 1  # code is not prose: seed, budget, nbval\n")
    return path


FILLER = " ".join(
    ["Attention mixes the values of a sentence with weights that sum to one."] * 10
)  # 130 words
CLEAN = markdown(f"# 05 · A clean chapter\n\n{FILLER}\n\n{FILLER}")


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The tool's command line, run in this process (a subprocess per case is slow on a shared machine)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = prose_check.main([str(a) for a in args])
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_a_clean_chapter_passes(tmp_path: Path) -> None:
    path = chapter(tmp_path, "05_clean", CLEAN)
    measured = prose_check.measure(path)
    assert measured.main_words == 2 * 130 + 4  # the heading "05 · A clean chapter": "·" is no word
    assert measured.violations() == []
    done = run_cli(path)
    assert done.returncode == 0, done.stderr
    assert "05_clean" in done.stdout and "ok" in done.stdout


def test_too_many_words_fails_with_the_chapter_limit(tmp_path: Path) -> None:
    long_text = "\n\n".join([FILLER] * 20)  # 2,600 words: fine for chapter 05, too long for chapter 01
    assert prose_check.measure(chapter(tmp_path, "05_long", markdown(long_text))).violations() == []
    path = chapter(tmp_path, "01_long", markdown(long_text))
    done = run_cli(path)
    assert done.returncode == 1
    assert "01_long: length: 2,600 words of main text (limit 2,500)" in done.stderr


@pytest.mark.parametrize(
    "sentence",
    [
        "The model learns it in 3 of 5 seeds.",
        "In three more draws the count was the same.",
        "At this budget the gap is large.",
        "The second head is borderline.",
        "Whether it lasts is not measured here.",
        "In this run the loss fell.",
        "In the stored table the RNN is slower.",
        "A trial run showed the same.",
        "The cell asserted that the loss falls.",
        "The protocol is the same for both models.",
        "The tolerance is one part in a thousand.",
        "It scores 25.0–44.3% on the test set.",
        "It needs 8–8 steps.",
        "It reads the key half **6.98**–**7.25**× more strongly.",
    ],
)
def test_each_kind_of_run_record_sentence_is_counted(sentence: str) -> None:
    assert prose_check.run_record_reasons(sentence), sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "Chapters 03–05 build attention.",
        "Part II (03–08) builds attention from a weighted average.",
        "See section 4.2-4.3 and § 3–4.",
        "In 2014–15 Bahdanau added soft alignment.",
        "Decoder step 3 draws a line to every encoder state.",
        "We draw the grid of scores.",
        "The value of 1e-5 sits inside the square root.",
        "Softmax turns scores into weights that sum to one.",
    ],
)
def test_ordinary_sentences_are_not_run_record(sentence: str) -> None:
    assert prose_check.run_record_reasons(sentence) == [], sentence


def test_run_record_rate_fails_and_names_the_rule(tmp_path: Path) -> None:
    record = "Over three seeds the accuracy was 81.4–85.3%. The budget was 200 steps."  # 2 sentences
    path = chapter(tmp_path, "05_record", CLEAN, markdown(record))  # 2 in ~280 words: 7 per 1,000
    measured = prose_check.measure(path)
    assert len(measured.run_record) == 2
    done = run_cli(path, "--verbose")
    assert done.returncode == 1
    assert "05_record: run record: 2 run-record sentences" in done.stderr
    assert "run record [seed, numeric range]: Over three seeds" in done.stdout


def test_the_preface_is_exempt_from_the_run_record_rate(tmp_path: Path) -> None:
    record = "A fixed seed makes random numbers repeat. Two draws after the same seed are identical."
    assert prose_check.measure(chapter(tmp_path, "00_preface", CLEAN, markdown(record))).violations() == []
    assert prose_check.measure(chapter(tmp_path, "05_same", CLEAN, markdown(record))).violations()


def test_details_blocks_and_exercises_are_not_main_text(tmp_path: Path) -> None:
    record = " ".join(["Over three seeds the accuracy was 81.4–85.3% at this budget."] * 30)
    block = markdown(
        f'<details class="measured"><summary>How this was measured</summary>\n\n{record}\n\n</details>'
    )
    exercises = markdown(
        f"## Exercises\n\n**05.1** {record}\n\n<details><summary>Worked answer</summary>\n\n"
        f"{record}\n\n</details>"
    )
    after = markdown("## Recap after the exercises\n\nThe recap counts again.")
    clean = prose_check.measure(chapter(tmp_path, "05_clean", CLEAN))
    path = chapter(tmp_path, "05_blocks", CLEAN, block, exercises, after)
    measured = prose_check.measure(path)
    assert measured.run_record == []
    assert measured.main_words == clean.main_words + 8  # only the last section's heading and sentence
    assert measured.violations() == []
    assert run_cli(path).returncode == 0


def test_a_block_must_close_in_its_own_cell(tmp_path: Path) -> None:
    opened = markdown('<details class="measured"><summary>How this was measured</summary>\n\nOver seeds.')
    closed = markdown("More text.\n\n</details>")
    path = chapter(tmp_path, "05_open", CLEAN, opened, closed)
    done = run_cli(path)
    assert done.returncode == 1
    assert "05_open: blocks: 2 markdown cell(s) whose <details> and </details> do not pair up" in done.stderr


def test_result_markers_and_link_targets_are_not_words(tmp_path: Path) -> None:
    text = "It reaches **0.93**<!-- result: acc --> [as shown](https://example.org/a/long/url)."
    assert prose_check.measure(chapter(tmp_path, "05_x", markdown(text))).main_words == 5


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("This was fixed in issue 28.", "issue"),
        ("The tests run nbval on each notebook.", "nbval"),
        ("The number is in the results manifest.", "manifest"),
        ("Each number carries a marker.", "marker"),
        ("Edit the source, then run `make sync`.", "make sync"),
        ("CI runs every chapter.", "CI"),
        ("The results check compares the digits.", "results check"),
    ],
)
def test_workshop_words_fail_even_inside_blocks(tmp_path: Path, text: str, rule: str) -> None:
    block = markdown(
        f'<details class="measured"><summary>How this was measured</summary>\n\n{text}\n\n</details>'
    )
    path = chapter(tmp_path, "05_workshop", CLEAN, block)
    assert [name for name, _ in prose_check.measure(path).workshop] == [rule]
    done = run_cli(path)
    assert done.returncode == 1
    assert f"05_workshop: workshop words: 1 ({rule})" in done.stderr


def test_workshop_words_are_allowed_in_the_preface_how_to_run_section_only(tmp_path: Path) -> None:
    run_it = markdown("## Run it\n\nThe tests run nbval on every notebook; `make sync` re-executes one.")
    later = markdown("## Notation\n\nThe tests run nbval.")
    assert prose_check.measure(chapter(tmp_path, "00_preface", CLEAN, run_it)).workshop == []
    preface = prose_check.measure(chapter(tmp_path, "00_preface", CLEAN, run_it, later))
    assert [name for name, _ in preface.workshop] == ["nbval"]
    # The same section in another chapter is not exempt.
    assert len(prose_check.measure(chapter(tmp_path, "05_run", CLEAN, run_it)).workshop) == 2


def test_the_verb_issue_and_ordinary_english_pass(tmp_path: Path) -> None:
    text = "At n = 32 the RNN issues **64** matrix products; the loop issues the calls one by one."
    assert prose_check.measure(chapter(tmp_path, "05_verb", CLEAN, markdown(text))).workshop == []


@pytest.mark.parametrize(
    "text",
    [
        "The seeds say attention is cheap.",
        "One seed says the cost is 4M.",
        "The seed article calls it a meeting.",
        "The seeds' most surprising claim.",
        "Both seeds draw the same diagram.",
        "| trouble (seed) | fix |",
        "The source seeds disagree.",
    ],
)
def test_seed_for_the_source_articles_fails(tmp_path: Path, text: str) -> None:
    path = chapter(tmp_path, "05_seed", CLEAN, markdown(text))
    assert len(prose_check.measure(path).seed_misuse) == 1, text
    done = run_cli(path)
    assert done.returncode == 1
    assert '05_seed: "seed" for the source articles' in done.stderr


def test_seed_as_a_random_seed_is_not_misuse() -> None:
    text = "Each seed sets the initial weights; the seeds' spread is small; seed 0 is drawn in the figure."
    assert not any(p.search(text) for _, p in prose_check.SEED_MISUSE_PATTERNS)


def test_report_never_fails_and_enforced_skips_pending_chapters(tmp_path: Path) -> None:
    bad = chapter(tmp_path, "07_bad", CLEAN, markdown("The tests run nbval."))
    good = chapter(tmp_path, "05_good", CLEAN)
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.tformer]\nprose_pending = ["07"]\n')
    assert run_cli(bad, good, "--report").returncode == 0
    assert run_cli(bad, good).returncode == 1
    done = run_cli(bad, good, "--enforced", "--pyproject", pyproject)
    assert done.returncode == 0, done.stderr
    assert "FAIL (pending)" in done.stdout
    # A pending chapter that passes must leave the list.
    pyproject.write_text('[tool.tformer]\nprose_pending = ["05", "07"]\n')
    done = run_cli(bad, good, "--enforced", "--pyproject", pyproject)
    assert done.returncode == 1
    assert "05_good passes now: remove '05' from [tool.tformer] prose_pending" in done.stderr


def test_the_command_line_runs_on_the_book() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "prose_check.py"), "--report"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "03_attention_weighted_average" in done.stdout


def test_the_pending_list_names_real_chapters() -> None:
    chapters = {p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.py")}
    assert prose_check.pending_chapters() <= chapters
