"""The preface's map of the book and chapter 05's two attention figures (``tformer.book.diagrams``): the map labels
every chapter once per part it builds and fills the chips of the short road the preface describes; the five-step
figure and the QKᵀ grid draw the numbers that ``tformer``'s attention computes from the same vectors."""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import torch

from tformer.book import diagrams
from tformer.functional import scaled_dot_product_attention

ROOT = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"


def _elements(name: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(diagrams.diagram(name).svg) if e.tag in (f"{SVG}rect", f"{SVG}text")]


def _chips(name: str) -> list[tuple[str, bool]]:
    """(chapter number, filled) for every chapter chip: a 24 × 18 rect followed by its number."""
    found = []
    elements = _elements(name)
    for rect, text in itertools.pairwise(elements):
        if rect.tag == f"{SVG}rect" and rect.get("width") == "24" and rect.get("height") == "18":
            assert text.tag == f"{SVG}text" and re.fullmatch(r"\d\d", text.text or ""), text.text
            found.append((text.text, rect.get("fill") != "#FFFFFF"))
    return found


def _texts(name: str) -> list[str]:
    return [e.text or "" for e in _elements(name) if e.tag == f"{SVG}text"]


def test_the_map_names_every_chapter_and_fills_the_short_road() -> None:
    chips = _chips("book_map")
    legend = chips[-2:]  # the legend's two sample chips: filled, then plain
    assert [filled for _, filled in legend] == [True, False]
    numbers = {number for number, _ in chips[:-2]}
    assert numbers == {f"{n:02d}" for n in range(1, 18)}, sorted(numbers)
    filled = {number for number, is_filled in chips if is_filled}
    assert filled == set(diagrams.SHORT_ROAD)
    for number, is_filled in chips:  # one chapter, one look, wherever it appears
        assert is_filled == (number in diagrams.SHORT_ROAD), number


def test_the_map_labels_the_parts_the_preface_promises() -> None:
    texts = _texts("book_map")
    for label in ("multi-head self-attention", "masked self-attention", "cross-attention", "feed-forward network",
                  "Add & Norm", "embedding + positions", "decoding: one word per step", "softmax(QKᵀ / √d_k) V"):
        assert label in texts, label
    # each labelled part sits beside the chip of the chapter that builds it (the next chip in drawing order)
    elements = _elements("book_map")
    expected = {"multi-head self-attention": "06", "masked self-attention": "06", "cross-attention": "06",
                "feed-forward network": "09", "Add & Norm": "09", "embedding + positions": "08",
                "Linear + softmax": "10", "decoding: one word per step": "10"}
    for i, element in enumerate(elements):
        if element.tag == f"{SVG}text" and element.text in expected:
            following = [e.text for e in elements[i + 1 :] if e.tag == f"{SVG}text" and re.fullmatch(r"\d\d", e.text or "")]
            assert following[0] == expected[element.text], (element.text, following[:2])


def test_the_preface_shows_the_map_and_the_same_short_road() -> None:
    preface = (ROOT / "notebooks" / "00_preface.py").read_text(encoding="utf-8")
    assert 'show("book_map")' in preface
    road = " → ".join(diagrams.SHORT_ROAD[:5]) + ", then " + " → ".join(diagrams.SHORT_ROAD[5:])
    assert road in preface, road


def _example() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    keys = torch.tensor(diagrams.FIVE_STEPS_KEYS, dtype=torch.float64)  # (S, d_k)
    values = torch.tensor(diagrams.FIVE_STEPS_VALUES, dtype=torch.float64)  # (S, d_v)
    query = torch.tensor([diagrams.FIVE_STEPS_QUERY], dtype=torch.float64)  # (L=1, d_k)
    return query, keys, values


def test_the_five_step_figure_draws_what_attention_computes() -> None:
    query, keys, values = _example()
    output, weights = scaled_dot_product_attention(query, keys, values)
    texts = _texts("five_steps")
    for w in weights[0].tolist():
        assert f"{w:.4f}" in texts, w
    assert f"[{output[0, 0]:.4f}, {output[0, 1]:.4f}]" in texts
    scaled = (query @ keys.T / math.sqrt(keys.shape[-1]))[0]
    for v in scaled.tolist():
        assert f"{v:.3f}" in texts, v
    assert f"sum = {scaled.exp().sum():.3f}" in texts


def test_the_qk_grid_is_the_product_of_its_rows_and_columns() -> None:
    _, keys, _ = _example()
    queries = torch.tensor(diagrams.QK_GRID_QUERIES, dtype=torch.float64)  # (L, d_k)
    assert queries[-1].tolist() == list(diagrams.FIVE_STEPS_QUERY)  # the chapter's own query is the last row
    scores = queries @ keys.T  # (L, S)
    # K's entries are drawn first (0.7 among them), then the grid: its cells are the last one-decimal numbers
    cells = [float(t.replace("−", "-")) for t in _texts("qk_grid") if re.fullmatch(r"−?\d\.\d", t)][-scores.numel() :]
    torch.testing.assert_close(torch.tensor(cells, dtype=torch.float64).view_as(scores), scores.round(decimals=1))
