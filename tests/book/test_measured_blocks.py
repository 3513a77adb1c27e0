""""How this was measured": the run record one click away from the finding, written one way in every chapter.

A block is a markdown cell of its own, exactly::

    # %% [markdown]
    # <details class="measured"><summary>How this was measured</summary>
    #
    # ...markdown, result markers, numbers...
    #
    # </details>

The blank lines after the summary and before ``</details>`` let the markdown inside render (in JupyterLab, Colab
and MyST alike, an HTML block ends at a blank line). JupyterLab and Colab render ``<details>`` closed; the HTML
book styles it as a small toggle (``book/_static/book.css``; the rendered pages are checked in
``test_html_book.py``); the PDF prints it open as a marked aside (``tools/build_pdf.py``'s
``open_measured_blocks``); the results check reads its markers like any other prose
(``test_results_manifest.py``); the prose check leaves it out of the main text (``test_prose_check.py``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import build_pdf  # noqa: E402
import prose_check  # noqa: E402

SOURCES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
OPENING = '<details class="measured"><summary>How this was measured</summary>'
# The summary may name what is measured ("How this was measured: the polyphone split") or what the block holds
# ("How the processes are started"); it is plain text on the opening line.
OPENING_LINE = re.compile(r'<details class="measured"><summary>[^<>\n]*\S[^<>\n]*</summary>')


def block_problems(cell: str) -> list[str]:
    """What is wrong with one markdown cell that holds a measured block (empty when it follows the form)."""
    lines = cell.strip("\n").splitlines()
    found = []
    if not OPENING_LINE.fullmatch(lines[0]):
        found.append(f"first line must be like {OPENING!r}, got {lines[0]!r}")
    if lines[-1] != "</details>":
        found.append("last line must be </details> (the block is its own cell)")
    if len(lines) < 5 or lines[1].strip() or lines[-2].strip():
        found.append("a blank line must follow the summary line and precede </details>")
    if cell.count("<details") != 1 or cell.count("</details>") != 1:
        found.append("one block per cell, no block inside a block")
    if any(line.startswith("#") for line in lines):
        found.append("no headings inside a block (they would break the page's sections)")
    return found


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_every_measured_block_is_written_one_way(py: Path) -> None:
    cells = [c for c in prose_check.markdown_cells(py) if 'class="measured"' in c]
    problems = [f"{py.stem}: block {i} ({c.strip().splitlines()[0][:60]!r}...): {p}"
                for i, c in enumerate(cells) for p in block_problems(c)]
    assert problems == []


def test_the_form_check_can_fail() -> None:
    good = f"{OPENING}\n\nSeeds 0, 1 and 2.\n\n</details>"
    assert block_problems(good) == []
    assert block_problems(f"{OPENING}\nSeeds 0, 1 and 2.\n\n</details>")  # no blank line: raw text in Lab
    assert block_problems("<details><summary>Measured</summary>\n\nSeeds.\n\n</details>")
    assert block_problems(f"Finding.\n\n{OPENING}\n\nSeeds.\n\n</details>")  # not its own cell
    assert block_problems(f"{OPENING}\n\n## A heading\n\n</details>")


def test_the_html_book_styles_the_block_as_a_toggle() -> None:
    css = (ROOT / "book" / "_static" / "book.css").read_text(encoding="utf-8")
    for rule in ("details.measured {", "details.measured > summary {", "details.measured[open]"):
        assert rule in css


def test_the_pdf_prints_the_block_open_as_an_aside() -> None:
    html = (
        '<article><p>The finding.</p><details class="measured"><summary>How this was measured</summary>'
        "<p>Seeds 0, 1 and 2: <strong>81.4</strong><!-- result: acc -->.</p></details>"
        "<details><summary>Worked answer (click to open)</summary><p>Answer.</p></details></article>"
    )
    soup = BeautifulSoup(html, "html.parser")
    assert build_pdf.open_measured_blocks(soup) == 1
    aside = soup.find("aside", class_="measured")
    assert aside is not None and soup.find("details", class_="measured") is None
    assert aside.find("p", class_="measured-heading").get_text() == "How this was measured"
    assert "Seeds 0, 1 and 2" in aside.get_text() and aside.find("summary") is None
    answer = soup.find("details")  # the worked answer stays a closed toggle
    assert answer is not None and not answer.has_attr("open")
    assert "aside.measured" in build_pdf.PRINT_CSS
