"""'Why' questions: each worked answer is hidden in the notebook (a collapsed markdown cell) and in the HTML book
(a ``<details>`` toggle, which JupyterLab, Colab and MyST-NB all render closed until clicked).

A worked answer is the markdown cell right after a cell that starts with ``**Why?**``. In the percent-format
source it reads ``# %% [markdown] jupyter={"source_hidden": true}`` followed by a ``<details>`` block with a
``<summary>``; the paired ``.ipynb`` must carry the same metadata (JupyterLab collapses the cell on opening).
The HTML side is checked in ``tests/book/test_html_book.py`` on the built pages.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import jupytext
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
SOURCES = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))
# Chapters whose exercise section has been given a 'why' question so far (issue 14); the rest follow.
WITH_WHY = {
    "01_rnn_baselines",
    "02_seq2seq_bottleneck",
    "03_attention_weighted_average",
    "04_query_key_value",
    "05_hand_calculation",
    "06_self_attention_and_masks",
    "07_multi_head_attention",
    "08_positional_encoding",
    "09_transformer_block",
    "10_encoder_decoder",
    "11_real_sentences",
    "12_three_families",
    "13_complexity",
    "14_new_problems",
    "15_parallelism",
    "16_summary",
    "17_small_gpt",
}


def worked_answers(cells: list) -> list[tuple[str, dict]]:
    """(source, metadata) of every cell that follows a '**Why?**' question."""
    found = []
    for question, answer in itertools.pairwise(cells):
        if question.cell_type == "markdown" and question.source.lstrip().startswith("**Why?**"):
            assert answer.cell_type == "markdown", "a 'why' question must be followed by its worked answer"
            found.append((answer.source, dict(answer.metadata)))
    return found


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_every_worked_answer_is_hidden(py: Path) -> None:
    answers = worked_answers(jupytext.read(py).cells)
    if py.stem in WITH_WHY:
        assert answers, f"{py.stem}: expected a '**Why?**' question with a worked answer"
    for source, metadata in answers:
        assert metadata.get("jupyter", {}).get("source_hidden") is True, f"{py.stem}: answer cell not collapsed"
        text = source.strip()
        assert text.startswith("<details>") and text.endswith("</details>"), f"{py.stem}: no <details> toggle"
        assert "<summary>" in text and "</summary>" in text


@pytest.mark.parametrize("py", [p for p in SOURCES if p.stem in WITH_WHY], ids=lambda p: p.stem)
def test_the_notebook_keeps_the_collapsed_metadata(py: Path) -> None:
    notebook = json.loads(py.with_suffix(".ipynb").read_text(encoding="utf-8"))
    cells = jupytext.reads(json.dumps(notebook), fmt="ipynb").cells
    answers = worked_answers(cells)
    assert answers and all(m.get("jupyter", {}).get("source_hidden") is True for _, m in answers)
