"""The HTML book carries its own CJK font: on a machine with no Chinese font, 猫 still renders (issue: Chinese on
every page). Chapter 05 is built alone, then printed by real headless Chromium with only the system's fonts (this
machine has none for Chinese): every glyph must be drawn, and without the book's font stylesheet the same page
prints missing-glyph boxes, so the check can fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import book_font  # noqa: E402
import build_book  # noqa: E402
import build_pdf  # noqa: E402
import chromium as chromium_tools  # noqa: E402

CHAPTER = ROOT / "notebooks" / "05_hand_calculation.ipynb"


def test_unicode_ranges_merge_neighbours() -> None:
    assert book_font.unicode_ranges("猫坐坑") == "U+5750-5751, U+732B"  # 坐 U+5750, 坑 U+5751
    assert book_font.cjk_characters(["The cat 猫, 猫。", "sat 坐"]) == "。坐猫"


def test_stylesheet_names_the_font_first_for_prose_and_code() -> None:
    css = book_font.stylesheet("猫")
    assert 'font-family: "tformer CJK"' in css and "unicode-range: U+732B;" in css
    for variable in ("base", "heading", "monospace"):
        assert f'--pst-font-family-{variable}: "tformer CJK"' in css


@pytest.fixture(scope="module")
def page() -> Iterator[Path]:
    """Chapter 05 built alone into a temporary book (with its font); the page's path."""
    with tempfile.TemporaryDirectory(prefix="tformer-font-") as tmp:
        src = Path(tmp) / "notebooks"
        src.mkdir()
        shutil.copy2(CHAPTER, src / CHAPTER.name)
        out = Path(tmp) / "html"
        build_book.build(src, out)
        yield out / "05_hand_calculation.html"


def _print_with_system_fonts_only(page: Path, pdf: Path) -> None:
    """Print ``page`` with headless Chromium seeing only the system's fonts (no mplfonts folder)."""
    binary = chromium_tools.find()
    with tempfile.TemporaryDirectory(prefix="tformer-font-chromium-") as tmp:
        done = subprocess.run(
            [binary, *chromium_tools.OFFLINE_FLAGS, f"--user-data-dir={Path(tmp) / 'profile'}",
             "--virtual-time-budget=15000", "--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.as_uri()],
            capture_output=True, text=True, timeout=300, check=False,
            env={**{k: v for k, v in os.environ.items() if k != "FONTCONFIG_FILE"}, "HOME": tmp},
        )
    assert done.returncode == 0 and pdf.is_file(), done.stderr[-1500:]


@pytest.mark.skipif(chromium_tools.find() is None, reason="needs Debian's chromium")
def test_chinese_renders_with_the_books_font_and_only_with_it(page: Path, tmp_path: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert "tformer-cjk.css" in text and "猫" in text
    woff2 = page.parent / book_font.WOFF2
    assert woff2.is_file() and woff2.stat().st_size < 200_000  # a subset, not the 16 MB font

    pdf = tmp_path / "with_font.pdf"
    _print_with_system_fonts_only(page, pdf)
    checked, missing = build_pdf.missing_glyphs(pdf)
    assert checked > 1000 and missing == [], missing[:3]

    # The same page without the font's stylesheet: the system has no Chinese font, so boxes appear.
    bare = page.with_name("05_without_font.html")
    bare.write_text(text.replace("tformer-cjk.css", "no-such-stylesheet.css"), encoding="utf-8")
    bare_pdf = tmp_path / "without_font.pdf"
    _print_with_system_fonts_only(bare, bare_pdf)
    _, missing_bare = build_pdf.missing_glyphs(bare_pdf)
    assert any("猫" in m.intended or "□" in m.context for m in missing_bare) and len(missing_bare) >= 4


@pytest.mark.skipif(chromium_tools.find() is None, reason="needs Debian's chromium")
def test_the_chinese_edition_renders_with_the_books_font(page: Path, tmp_path: Path) -> None:
    zh = page.parent / "zh_CN" / page.name
    text = zh.read_text(encoding="utf-8")
    assert "tformer-cjk.css" in text and "注意力" in text
    pdf = tmp_path / "zh.pdf"
    _print_with_system_fonts_only(zh, pdf)
    checked, missing = build_pdf.missing_glyphs(pdf)
    assert checked > 3000 and missing == [], missing[:3]
