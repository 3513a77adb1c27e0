"""Give the HTML book its own Chinese font, so that 猫 坐 在 垫子 上 renders on a machine without a CJK font.

``make html`` calls :func:`add_font` on the built book. It collects every CJK character the pages show, cuts
those glyphs out of Noto Sans CJK SC (the ``.otf`` that the pinned ``mplfonts`` package installs; SIL Open Font
License 1.1, © Google and Adobe) with fontTools' subsetter, and writes them as one small WOFF2 file with the
stylesheet that declares it (``@font-face`` with a ``unicode-range``, so the font is used only for those
characters, and the theme's prose, heading and code font stacks that name it first). ``book/conf.py`` links
the stylesheet from every page.

Usage: python tools/book_font.py build/html   (``make html`` runs it; it can be rerun on a built book)
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

FAMILY = "tformer CJK"
FONT_FILE = "NotoSansCJKsc-Regular.otf"
WOFF2 = Path("_static/fonts/tformer-cjk.woff2")
STYLESHEET = Path("_static/tformer-cjk.css")
# CJK punctuation, kana, CJK ideographs (extension A and the main block), compatibility ideographs, full-width forms.
CJK_RANGES = ((0x3000, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xFF00, 0xFFEF))


def is_cjk(char: str) -> bool:
    """True for a character in one of ``CJK_RANGES``."""
    code = ord(char)
    return any(low <= code <= high for low, high in CJK_RANGES)


def cjk_characters(texts: Iterable[str]) -> str:
    """The distinct CJK characters of ``texts``, sorted by code point."""
    return "".join(sorted({c for text in texts for c in text if is_cjk(c)}))


def unicode_ranges(chars: str) -> str:
    """CSS ``unicode-range`` for ``chars``: consecutive code points merged, e.g. ``U+732B, U+5750-5751``."""
    codes = sorted({ord(c) for c in chars})
    spans: list[list[int]] = []
    for code in codes:
        if spans and code == spans[-1][1] + 1:
            spans[-1][1] = code
        else:
            spans.append([code, code])
    return ", ".join(f"U+{a:X}" if a == b else f"U+{a:X}-{b:X}" for a, b in spans)


def source_font() -> Path:
    """The full Noto Sans CJK SC font that ``mplfonts`` installs.

    Raises:
        FileNotFoundError: if ``mplfonts`` is installed without it.
    """
    import mplfonts

    path = Path(mplfonts.__file__).parent / "fonts" / FONT_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path}: expected mplfonts to ship {FONT_FILE}")
    return path


def stylesheet(chars: str) -> str:
    """The ``@font-face`` rule for the subset and the theme's font stacks with ``FAMILY`` first."""
    return f"""/* Written by tools/book_font.py: the CJK characters of this book, cut from Noto Sans CJK SC
   (SIL Open Font License 1.1, (c) Google and Adobe), so they render without a system CJK font. */
@font-face {{
  font-family: "{FAMILY}";
  src: url("fonts/{WOFF2.name}") format("woff2");
  font-display: block;
  unicode-range: {unicode_ranges(chars)};
}}
/* The unicode-range keeps Latin text in the theme's own fonts; only the characters above use this one. */
html:root {{
  --pst-font-family-base: "{FAMILY}", var(--pst-font-family-base-system);
  --pst-font-family-heading: "{FAMILY}", var(--pst-font-family-base-system);
  --pst-font-family-monospace: "{FAMILY}", var(--pst-font-family-monospace-system);
}}
"""


def add_font(html_dir: Path) -> tuple[int, int]:
    """Subset the font to the CJK characters of ``html_dir``'s pages and write it with its stylesheet.

    Returns:
        (number of CJK characters, size of the WOFF2 file in bytes).

    Raises:
        FileNotFoundError: if ``html_dir`` holds no page, or the source font is missing.
    """
    from fontTools import subset

    pages = sorted(html_dir.glob("*.html"))
    if not pages:
        raise FileNotFoundError(f"{html_dir}: expected the built HTML book (*.html), found no page")
    texts = [page.read_text(encoding="utf-8") for page in pages]
    # Messages the pages' scripts write at run time (search results, "no match"), as \uXXXX escapes.
    script = html_dir / "_static" / "translations.js"
    if script.is_file():
        texts.append(re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m[1], 16)), script.read_text(encoding="utf-8")))
    chars = cjk_characters(texts)
    options = subset.Options()
    options.flavor = "woff2"  # Brotli-compressed: the pinned `brotli` package
    options.layout_features = ["*"]
    options.name_IDs = ["*"]  # keep the copyright and licence records
    font = subset.load_font(str(source_font()), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=chars)
    subsetter.subset(font)
    out = html_dir / WOFF2
    out.parent.mkdir(parents=True, exist_ok=True)
    subset.save_font(font, str(out), options)
    (html_dir / STYLESHEET).write_text(stylesheet(chars), encoding="utf-8")
    return len(chars), out.stat().st_size


def main(argv: list[str]) -> int:
    """Add the font to the book in ``argv[1]`` (default ``build/html``)."""
    html_dir = Path(argv[1]) if len(argv) > 1 else Path("build/html")
    try:
        count, size = add_font(html_dir)
    except FileNotFoundError as error:
        print(f"book_font: {error}", file=sys.stderr)
        return 1
    print(f"book_font: {count} CJK characters -> {html_dir / WOFF2} ({size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
