"""Chinese tokens render in every figure: no "Glyph ... missing" or other warning is stored in any notebook output.

Two halves: a scan of the outputs stored in ``notebooks/*.ipynb`` (what readers see in the HTML book, JupyterLab
and on GitHub), and a direct check that ``tformer.book.plot.use_book_style()`` lets matplotlib's Agg backend draw
"猫 坐 在 垫子 上" with warnings turned into errors. ``TFORMER_NOTEBOOKS`` overrides the notebook folder.
"""

from __future__ import annotations

import io
import json
import os
import re
import warnings
from pathlib import Path

import matplotlib as mpl
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from tformer.book.plot import CJK_FONT, use_book_style

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = Path(os.environ.get("TFORMER_NOTEBOOKS", ROOT / "notebooks"))
SENTENCE = "猫 坐 在 垫子 上"
# matplotlib: "UserWarning: Glyph 29483 (\N{CJK UNIFIED IDEOGRAPH-732B}) missing from font(s) DejaVu Sans."
GLYPH_MISSING = re.compile(r"Glyph .*? missing", re.IGNORECASE)
# A Python warning printed to stderr (UserWarning:, FutureWarning:, ... or a logger's WARNING). Progress bars
# (tqdm writes to stderr) do not match.
STDERR_WARNING = re.compile(r"\b[A-Z]\w*Warning\b|\bWARNING\b")


def _text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def output_problems(notebook: dict, name: str) -> list[str]:
    """List every stored output that shows a missing glyph or a stderr warning, as "name, cell N: line".

    Cells are numbered from 1 in notebook order (all cell types), as JupyterLab shows them.
    """
    problems = []
    for number, cell in enumerate(notebook.get("cells", []), start=1):
        for output in cell.get("outputs", []):
            texts = []
            if output.get("output_type") == "stream":
                texts.append((output.get("name"), _text(output.get("text", ""))))
            for mime, value in output.get("data", {}).items():
                if mime.startswith("text/"):
                    texts.append((mime, _text(value)))
            for kind, text in texts:
                for line in text.splitlines():
                    if GLYPH_MISSING.search(line) or (kind == "stderr" and STDERR_WARNING.search(line)):
                        problems.append(f"{name}, cell {number} ({kind}): {line.strip()[:200]}")
    return problems


NOTEBOOK_FILES = sorted(NOTEBOOKS.glob("*.ipynb")) if NOTEBOOKS.is_dir() else []


@pytest.mark.parametrize("path", NOTEBOOK_FILES, ids=[p.name for p in NOTEBOOK_FILES])
def test_stored_outputs_have_no_missing_glyph_or_warning(path: Path) -> None:
    problems = output_problems(json.loads(path.read_text(encoding="utf-8")), path.name)
    assert not problems, "warnings stored in notebook outputs:\n" + "\n".join(problems)


def test_output_scan_names_notebook_and_cell() -> None:
    glyph = "UserWarning: Glyph 29483 (\\N{CJK UNIFIED IDEOGRAPH-732B}) missing from font(s) DejaVu Sans.\n"
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": "# Title"},
            {
                "cell_type": "code",
                "outputs": [{"output_type": "stream", "name": "stderr", "text": "100%|##| 5/5\n"}],
            },
            {"cell_type": "code", "outputs": [{"output_type": "stream", "name": "stderr", "text": [glyph]}]},
            {
                "cell_type": "code",
                "outputs": [{"output_type": "stream", "name": "stderr", "text": "FutureWarning: x\n"}],
            },
            {
                "cell_type": "code",
                "outputs": [{"output_type": "execute_result", "data": {"text/plain": glyph}}],
            },
        ]
    }
    problems = output_problems(notebook, "07_demo.ipynb")
    assert [p.split(":")[0] for p in problems] == [
        "07_demo.ipynb, cell 3 (stderr)",
        "07_demo.ipynb, cell 4 (stderr)",
        "07_demo.ipynb, cell 5 (text/plain)",
    ]


def _draw(text: str) -> bytes:
    """Render a small figure with ``text`` as title and tick labels on the Agg canvas; return the PNG bytes."""
    fig = Figure(figsize=(3, 2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_title(text)
    tokens = text.split()
    ax.set_xticks(range(len(tokens)), labels=tokens)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def test_use_book_style_renders_chinese_without_warning() -> None:
    with mpl.rc_context():
        use_book_style()
        assert CJK_FONT in mpl.rcParams["font.family"]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            png = _draw(SENTENCE)
    assert png.startswith(b"\x89PNG")


def test_without_book_style_chinese_glyphs_are_missing() -> None:
    """The control: DejaVu Sans alone lacks 猫, so the check above is able to fail."""
    with (
        mpl.rc_context({"font.family": ["DejaVu Sans"]}),
        pytest.warns(UserWarning, match=GLYPH_MISSING.pattern),
    ):
        _draw(SENTENCE)
