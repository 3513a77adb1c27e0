"""Print the offline HTML book to one PDF with headless Chromium (``make pdf``).

Usage::

    python tools/build_pdf.py [--html build/html] [--out build/tformer.pdf]

The book built by ``make html`` is joined into one page, ``_book_for_print.html`` beside the chapters (so every
image, stylesheet and the local MathJax resolve as they do for the chapters): a title page, the contents, then each
chapter's article on a new page. Every id is prefixed with its chapter and every link between chapters or within
one is rewritten to a same-document anchor, so Chromium writes them as internal PDF links; links to the web stay
web links; links to pages that are not in the PDF (search, index) become plain text. Chromium opens that page
offline (every host name unresolvable), lets MathJax finish (``--virtual-time-budget``), and prints it
(``--print-to-pdf``, no header or footer, a document outline from the headings). Chromium titles each bookmark
with the text it painted for the heading, which is not the heading's text: the lines of a wrapped heading are
joined without a space ("Recurrent networks and" + "the wall they hit" -> "...andthe wall..."), and a heading
painted on two pages (nearly always one at the top of a page) has one of its lines twice ("RecapRecap"). ``fix_outline`` therefore rewrites every bookmark
title with the text of its heading in the printed page (the bookmarks' targets, which Chromium gets right, stay).
The colophon on the title page
states how many formulas MathJax typeset, counted in the browser after typesetting, and the test compares it with
the number of formulas in the HTML. Chromium's fontconfig also sees the Noto Sans CJK font shipped by the
``mplfonts`` dependency, so Chinese text prints in a real font. pypdf reads the result back to count its pages,
and ``missing_glyphs`` lists every character printed as a missing glyph (a "tofu" box: no installed font had it).

Exit status 0 on success; 1 with a message when the HTML book or Chromium is missing or printing fails.
"""

from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys
import tempfile
import time
import unicodedata
from array import array
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_book  # noqa: E402
import chromium as chromium_tools  # noqa: E402

PRINT_PAGE = "_book_for_print.html"
CHROMIUM_FLAGS = (
    *chromium_tools.OFFLINE_FLAGS,
    "--no-pdf-header-footer",
    "--generate-pdf-document-outline",
)
# MathJax 3 typesets after the page loads; the script then writes the count of typeset formulas into the colophon.
MATHJAX_REPORT = """<script>
window.addEventListener("load", () => {
  const report = (text) => { document.getElementById("pdf-mathjax-report").textContent = text; };
  if (!window.MathJax || !MathJax.startup) { report("MathJax did not load"); return; }
  MathJax.startup.promise.then(() => {
    const typeset = document.querySelectorAll("mjx-container").length;
    const errors = document.querySelectorAll("mjx-merror").length;
    report(`MathJax typeset ${typeset} formulas with ${errors} errors.`);
  });
});
</script>"""
PRINT_CSS = """<style>
@page { size: A4; margin: 16mm 14mm 16mm 14mm; }
section.pdf-chapter { break-before: page; }
section.pdf-title { text-align: center; padding-top: 30vh; break-after: page; }
section.pdf-title h1 { font-size: 2.2em; }
/* sphinx-book-theme hides the first <h1> of each parent when printing (it prints its own title block); here
   each chapter is a section whose first <h1> is the chapter title, so show it. */
@media print { .bd-main .bd-content .bd-article h1:first-of-type { display: block !important; } }
/* A "How this was measured" block prints open, as a marked aside headed by its summary (open_measured_blocks). */
aside.measured { border-left: 3px solid #6e8fb5; background: #f4f6f9; padding: 0.2em 0.9em 0.4em;
                 margin: 0.4em 0 1em; font-size: 0.9em; }
aside.measured > p.measured-heading { font-weight: 600; font-size: 0.95em; color: #3d4f66; margin: 0.4em 0; }
</style>"""


class PdfError(Exception):
    """A problem reported without a traceback."""


@dataclass
class Joined:
    """The single printable page: its path, the formulas in it, and its headings (level, text) in document order."""

    page: Path
    formulas: int
    headings: list[tuple[int, str]]


def chromium() -> str:
    """The Chromium binary's path.

    Raises:
        PdfError: if none is installed.
    """
    found = chromium_tools.find()
    if found:
        return found
    raise PdfError("no Chromium binary found (Debian: apt-get install -y chromium)")


def chromium_env(tmp: Path) -> dict[str, str]:
    """Environment for Chromium whose fontconfig also sees the fonts shipped by ``mplfonts`` (Noto Sans CJK SC)."""
    return chromium_tools.environment(tmp)


def _rewrite_links(article, stem: str, chapters: set[str]) -> None:
    """Prefix ids with the chapter and point links at same-document anchors (see the module docstring)."""
    for el in article.find_all(id=True):
        el["id"] = f"{stem}--{el['id']}"
    for a in article.find_all("a", href=True):
        parts = urlsplit(a["href"])
        if parts.scheme or parts.netloc:
            continue  # a web link stays a web link
        page = Path(parts.path).stem if parts.path else stem
        if parts.path and Path(parts.path).name not in {f"{c}.html" for c in chapters}:
            del a["href"]  # search, genindex, sources: not part of the PDF
            continue
        a["href"] = f"#{page}--{parts.fragment}" if parts.fragment else f"#{page}"


def headings(root) -> list[tuple[int, str]]:
    """(level, text) of every heading under ``root`` in document order, as Chromium's outline sees them: ``<h1>`` to
    ``<h6>`` and elements with ``role="heading"`` (the contents' "Chapters" caption); the text without Sphinx's
    "#" permalink, its white space collapsed."""
    found = []
    for el in root.find_all(True):
        if re.fullmatch(r"h[1-6]", el.name):
            level = int(el.name[1])
        elif el.get("role") == "heading":
            level = int(el.get("aria-level", 2))
        else:
            continue
        found.append((level, " ".join(_text_without_permalink(el).split())))
    return found


def _text_without_permalink(heading) -> str:
    parts = []
    for string in heading.find_all(string=True):
        parent = string.parent
        while parent is not heading and "headerlink" not in (parent.get("class") or []):
            parent = parent.parent
        if parent is heading:
            parts.append(str(string))
    return "".join(parts)


def open_measured_blocks(root) -> int:
    """Print every collapsed "How this was measured" block open: each ``<details class="measured">`` under
    ``root`` (a BeautifulSoup tree) becomes ``<aside class="measured">`` whose first child is its summary as a
    small heading (a ``<p class="measured-heading">``, not an ``<h*>``, so the PDF's outline keeps the chapters'
    own headings). Worked answers (``<details>`` without the class) are left closed. Returns the count."""
    from bs4 import BeautifulSoup

    blocks = root.select("details.measured")
    for block in blocks:
        summary = block.find("summary")
        title = " ".join(summary.get_text(" ").split()) if summary else "How this was measured"
        if summary is not None:
            summary.decompose()
        block.name = "aside"
        block.attrs = {"class": ["measured"], "aria-label": title}
        heading = BeautifulSoup("", "html.parser").new_tag("p", attrs={"class": "measured-heading"})
        heading.string = title
        block.insert(0, heading)
    return len(blocks)


def join_book(html_dir: Path) -> Joined:
    """Write the single printable page into ``html_dir``; return it with its formula count and headings.

    Raises:
        PdfError: if ``html_dir`` holds no built book.
    """
    from bs4 import BeautifulSoup

    index = html_dir / "index.html"
    if not index.is_file():
        raise PdfError(f"{html_dir}: no index.html; build the HTML book first (make html)")
    index_soup = BeautifulSoup(index.read_text(encoding="utf-8"), "html.parser")
    chapters = [
        Path(urlsplit(a["href"]).path).stem
        for a in index_soup.select("article a.reference.internal[href]")
        if build_book.CHAPTER_RE.match(Path(urlsplit(a["href"]).path).stem + ".ipynb")
    ]
    chapters = list(dict.fromkeys(chapters))
    if not chapters:
        raise PdfError(f"{index}: the contents list no chapter")
    soups = {stem: BeautifulSoup((html_dir / f"{stem}.html").read_text(encoding="utf-8"), "html.parser")
             for stem in chapters}
    # The head of a page that loads MathJax carries every stylesheet and script the chapters need.
    head_from = next((s for s in soups.values() if s.find("script", src=re.compile("mathjax"))), index_soup)
    out = BeautifulSoup("<!DOCTYPE html><html><head></head><body></body></html>", "html.parser")
    for el in head_from.head.find_all(["meta", "link", "style", "script"]):
        out.head.append(el)
    title = out.new_tag("title")
    title.string = build_book.BOOK_TITLE
    out.head.append(title)
    out.head.append(BeautifulSoup(PRINT_CSS, "html.parser"))

    body = BeautifulSoup(
        '<div class="bd-container"><div class="bd-container__inner bd-page-width"><main class="bd-main">'
        '<div class="bd-content"><div class="bd-article-container"><article class="bd-article" id="pdf-book">'
        "</article></div></div></main></div></div>",
        "html.parser",
    )
    book = body.find("article")
    cover = BeautifulSoup(
        f'<section class="pdf-title"><h1>{build_book.BOOK_TITLE}</h1>'
        "<p>The offline edition, printed from the HTML book and the outputs stored in the notebooks.</p>"
        '<p id="pdf-mathjax-report">MathJax has not run.</p></section>',
        "html.parser",
    )
    book.append(cover)
    contents = index_soup.select_one("article.bd-article")
    _rewrite_links(contents, "index", set(chapters))
    for h1 in contents.find_all("h1"):
        h1.decompose()  # the title page already says it
    contents_section = out.new_tag("section", attrs={"class": "pdf-contents", "id": "index"})
    contents_section.append(out.new_tag("h1"))
    contents_section.h1.string = "Contents"
    contents_section.extend(list(contents.children))
    book.append(contents_section)
    for stem, soup in soups.items():
        article = soup.select_one("article.bd-article")
        if article is None:
            raise PdfError(f"{stem}.html: no <article class='bd-article'>")
        _rewrite_links(article, stem, set(chapters))
        open_measured_blocks(article)
        section = out.new_tag("section", attrs={"class": "pdf-chapter", "id": stem})
        section.extend(list(article.children))
        book.append(section)
    out.body.append(body)
    out.body.append(BeautifulSoup(MATHJAX_REPORT, "html.parser"))
    page = html_dir / PRINT_PAGE
    page.write_text(str(out), encoding="utf-8")
    return Joined(page, len(out.select("span.math, div.math")), headings(book))


def print_pdf(page: Path, pdf: Path, *, budget_ms: int = 60_000, timeout_s: int = 300) -> None:
    """Print ``page`` to ``pdf`` with headless Chromium, offline.

    Raises:
        PdfError: if Chromium fails or writes no PDF.
    """
    pdf.parent.mkdir(parents=True, exist_ok=True)
    pdf.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="tformer-pdf-") as tmp:
        done = subprocess.run(
            [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={Path(tmp) / 'profile'}",
             f"--virtual-time-budget={budget_ms}", f"--print-to-pdf={pdf}", page.as_uri()],
            capture_output=True, text=True, timeout=timeout_s, env=chromium_env(Path(tmp)), check=False,
        )
    if done.returncode != 0 or not pdf.is_file():
        raise PdfError(f"chromium exited {done.returncode} without a PDF: {done.stderr[-1500:]}")


def read_pdf(pdf: Path):
    """A pypdf reader for ``pdf``, quiet about the cross-reference size Chromium declares (pypdf repairs it)."""
    import logging

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    return PdfReader(pdf)


def count_pages(pdf: Path) -> int:
    """The PDF's page count, read back with pypdf (Chromium already set the title from the page's <title>)."""
    return len(read_pdf(pdf).pages)


def _squash(text: str) -> str:
    """The word characters of ``text``, lower case: what a Chromium bookmark title keeps of its heading."""
    return "".join(re.findall(r"\w+", unicodedata.normalize("NFKC", text))).lower()


def _is_subsequence(short: str, long: str) -> bool:
    chars = iter(long)
    return all(c in chars for c in short)


def _painted_from(title: str, heading: str) -> bool:
    """True when Chromium's bookmark ``title`` can come from ``heading``: the same words, spaces lost at line
    wraps, at most each line painted twice."""
    got, want = _squash(title), _squash(heading)
    return got == want or (len(want) < len(got) <= 2 * len(want) and _is_subsequence(want, got))


def _outline_items(outline) -> list:
    """The outline's items (pypdf dictionaries) in document order: each item, then its children."""
    items, item = [], outline.get("/First")
    while item is not None:
        item = item.get_object()
        items.append(item)
        items.extend(_outline_items(item))
        item = item.get("/Next")
    return items


def fix_outline(pdf: Path, heading_list: list[tuple[int, str]]) -> list[str]:
    """Rewrite the bookmark titles of ``pdf`` with their headings' text, appended as an incremental update.

    Bookmarks and headings are matched in document order; a heading Chromium did not bookmark (one not printed,
    such as inside a closed toggle) is skipped. Returns the titles of the bookmarks no heading matched (left as
    Chromium wrote them).
    """
    from pypdf.generic import NameObject, TextStringObject

    reader = read_pdf(pdf)
    outline = reader.root_object.get("/Outlines")
    unmatched: list[str] = []
    changed = []
    next_heading = 0
    for item in _outline_items(outline.get_object()) if outline is not None else []:
        title = str(item.get("/Title", ""))
        match = next((i for i in range(next_heading, len(heading_list))
                      if _painted_from(title, heading_list[i][1])), None)
        if match is None:
            unmatched.append(title)
            continue
        next_heading = match + 1
        if heading_list[match][1] != title:
            item[NameObject("/Title")] = TextStringObject(heading_list[match][1])
            changed.append(item)
    if changed:
        _append_update(pdf, reader, changed)
    return unmatched


def _append_update(pdf: Path, reader, objects: list) -> None:
    """Append new versions of ``objects`` (dictionaries read from ``pdf``) as a PDF incremental update: the
    objects, a cross-reference section for them and a trailer pointing back at Chromium's (``/Prev``). pypdf's
    own incremental writer hashes all of the book's ~100,000 objects first, which takes half a minute."""
    with open(pdf, "rb") as f:
        f.seek(0, 2)
        base = f.tell()
        f.seek(max(0, base - 1024))
        tail = f.read()
    prev = re.search(rb"startxref\s+(\d+)\s+%%EOF\s*$", tail)
    if prev is None:
        raise PdfError(f"{pdf}: no startxref at the end; cannot append the retitled bookmarks")
    update = io.BytesIO()
    update.write(b"" if tail.endswith(b"\n") else b"\n")
    offsets = {}
    for obj in sorted(objects, key=lambda o: o.indirect_reference.idnum):
        ref = obj.indirect_reference
        offsets[ref.idnum] = (base + update.tell(), ref.generation)
        update.write(f"{ref.idnum} {ref.generation} obj\n".encode())
        obj.write_to_stream(update)
        update.write(b"\nendobj\n")
    xref = base + update.tell()
    update.write(b"xref\n")
    for number, (offset, generation) in offsets.items():
        update.write(f"{number} 1\n{offset:010d} {generation:05d} n \n".encode())
    root, info = reader.trailer.raw_get("/Root"), reader.trailer.get("/Info")
    size = max(int(reader.trailer["/Size"]), max(offsets) + 1)
    refs = f"/Root {root.idnum} {root.generation} R"
    if info is not None:
        info = reader.trailer.raw_get("/Info")
        refs += f" /Info {info.idnum} {info.generation} R"
    update.write(f"trailer\n<< /Size {size} {refs} /Prev {int(prev[1])} >>\nstartxref\n{xref}\n%%EOF\n".encode())
    with open(pdf, "ab") as f:
        f.write(update.getvalue())


# ------------------------------------------------------------------------------------------------ missing glyphs
# Chromium (Skia) writes text as runs of glyph ids in hex strings: ``<00330044> Tj`` or ``[<0033> -20 <0044>] TJ``
# for Type0 fonts (two bytes per glyph, glyph id = code), one byte per code for Type3 fonts (whose /Differences
# name the glyph, ``/g<id>``). A character that no font on the machine has is drawn with glyph 0, ``.notdef``: an
# empty box in the PDF, sometimes tagged with the intended text in a marked-content /ActualText.
_TEXT_TOKEN = re.compile(
    rb"/(?P<font>[^\s/\[\]<>()%{}]+)\s+[-+\d.]+\s+Tf"
    rb"|/ActualText\s*<(?P<actual>[0-9A-Fa-f\s]*)>"
    rb"|(?P<emc>\bEMC\b)"
    rb"|<(?P<hex>[0-9A-Fa-f\s]*)>\s*(?:Tj|'|\")"
    rb"|\[(?P<array>[^\]]*)\]\s*TJ"
    rb"|(?P<literal>\((?:\\.|[^\\)])*\)\s*(?:Tj|'|\"))"
)
_HEX = re.compile(rb"<([0-9A-Fa-f\s]*)>")
_SPACE = re.compile(rb"\s")
_NOTDEF_NAMES = {"/.notdef", "/g0"}


@dataclass(frozen=True)
class MissingGlyph:
    """One glyph printed as ``.notdef``: its page (1-based), font, and the run of text around it."""

    page: int
    font: str
    context: str  # the run decoded through the font's ToUnicode map, the missing glyph shown as "□"
    intended: str  # the marked-content /ActualText around it, when Chromium wrote one, else ""


def _to_unicode(font) -> dict[int, str]:
    """The font's ToUnicode map (code -> text): the bfchar and bfrange entries Skia writes."""
    stream = font.get("/ToUnicode")
    if stream is None:
        return {}
    data = stream.get_object().get_data()

    def text(hexes: bytes) -> str:
        return bytes.fromhex(hexes.decode()).decode("utf-16-be", errors="replace")

    table: dict[int, str] = {}
    for block in re.findall(rb"beginbfchar(.*?)endbfchar", data, re.DOTALL):
        for src, dst in re.findall(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]*)>", block):
            table[int(src, 16)] = text(dst)
    for block in re.findall(rb"beginbfrange(.*?)endbfrange", data, re.DOTALL):
        for lo, hi, dst, many in re.findall(
            rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*(?:<([0-9A-Fa-f]+)>|\[([^\]]*)\])", block
        ):
            lo, hi = int(lo, 16), int(hi, 16)
            if dst:
                first = text(dst)
                for code in range(lo, hi + 1):
                    table[code] = first[:-1] + chr(ord(first[-1]) + code - lo)
            else:
                for code, each in zip(range(lo, hi + 1), _HEX.findall(many), strict=False):
                    table[code] = text(each)
    return table


class _FontInfo:
    """What the scan needs of one font: bytes per code, which codes are .notdef, and its ToUnicode map."""

    def __init__(self, font) -> None:
        self.name = str(font.get("/BaseFont", font.get("/Name", "?")))
        subtype = font.get("/Subtype")
        self.width = 2 if subtype == "/Type0" else 1
        self.notdef_codes = {0} if subtype == "/Type0" else set()
        encoding = font.get("/Encoding")
        if subtype == "/Type3" and encoding is not None and hasattr(encoding, "get"):
            code = 0
            for item in encoding.get_object().get("/Differences", []):
                if isinstance(item, int):
                    code = item
                    continue
                if str(item) in _NOTDEF_NAMES:
                    self.notdef_codes.add(code)
                code += 1
        elif subtype not in {"/Type0", "/Type3"}:
            raise PdfError(f"font {self.name}: subtype {subtype} is not one Chromium writes; cannot check glyphs")
        self.to_unicode = _to_unicode(font)


def _resolved(obj) -> dict:
    """A PDF dictionary, followed if it is a reference; {} for None."""
    return {} if obj is None else obj.get_object()


def missing_glyphs(pdf) -> tuple[int, list[MissingGlyph]]:
    """Scan every page's text (and its form XObjects) for glyphs printed as ``.notdef``.

    Args:
        pdf: the PDF's path, or a pypdf reader already open on it.

    Returns:
        the number of glyphs checked and one ``MissingGlyph`` per missing one.

    Raises:
        PdfError: on text the scan cannot decode (a literal string, an unknown font type), so it never passes blind.
    """
    reader = read_pdf(pdf) if isinstance(pdf, str | Path) else pdf
    fonts: dict[int, _FontInfo] = {}
    seen_forms: set[int] = set()
    missing: list[MissingGlyph] = []
    checked = 0

    def font_info(ref) -> _FontInfo:
        obj = ref.get_object()
        key = ref.idnum if hasattr(ref, "idnum") else id(obj)
        if key not in fonts:
            fonts[key] = _FontInfo(obj)
        return fonts[key]

    def scan(page_no: int, data: bytes, resources) -> None:
        nonlocal checked
        resources = _resolved(resources)
        page_fonts = _resolved(resources.get("/Font"))
        by_name: dict[bytes, _FontInfo] = {}
        font: _FontInfo | None = None
        actual = ""
        for m in _TEXT_TOKEN.finditer(data):
            if m["font"] is not None:
                if m["font"] not in by_name:
                    by_name[m["font"]] = font_info(page_fonts.raw_get("/" + m["font"].decode()))
                font = by_name[m["font"]]
                continue
            if m["actual"] is not None:
                actual = bytes.fromhex(_SPACE.sub(b"", m["actual"]).decode()).decode("utf-16", errors="replace")
                continue
            if m["emc"] is not None:
                actual = ""
                continue
            if m["literal"] is not None or (m["array"] is not None and b"(" in m["array"]):
                raise PdfError(f"page {page_no}: text as a literal string; the glyph scan reads hex strings only")
            if font is None:
                raise PdfError(f"page {page_no}: text shown before any font was set")
            runs = [m["hex"]] if m["hex"] is not None else _HEX.findall(m["array"])
            raw = bytes.fromhex(_SPACE.sub(b"", b"".join(runs)).decode())
            checked += len(raw) // font.width
            if font.width == 2:  # glyph 0 is zero in either byte order: a native-order array finds it at C speed
                suspect = 0 in array("H", raw[: len(raw) // 2 * 2])
            else:
                suspect = bool(font.notdef_codes.intersection(raw))
            if suspect:
                codes = [int.from_bytes(raw[i:i + font.width], "big") for i in range(0, len(raw), font.width)]
                context = "".join("□" if c in font.notdef_codes else font.to_unicode.get(c, "?") for c in codes)
                for c in codes:
                    if c in font.notdef_codes:
                        missing.append(MissingGlyph(page_no, font.name, context, actual))
        for ref in _resolved(resources.get("/XObject")).values():
            form = ref.get_object()
            key = ref.idnum if hasattr(ref, "idnum") else id(form)
            if form.get("/Subtype") == "/Form" and key not in seen_forms:
                seen_forms.add(key)
                scan(page_no, form.get_data(), form.get("/Resources"))

    for number, page in enumerate(reader.pages, start=1):
        contents = page.get_contents()
        if contents is not None:
            scan(number, contents.get_data(), page.get("/Resources"))
    return checked, missing


def build(html_dir: Path, pdf: Path) -> tuple[int, int]:
    """Print the HTML book in ``html_dir`` to ``pdf`` and title its bookmarks; return (pages, formulas in the HTML).

    Raises:
        PdfError: on a missing book or Chromium, or a failed print.
    """
    joined = join_book(html_dir)
    try:
        print_pdf(joined.page, pdf)
    finally:
        joined.page.unlink(missing_ok=True)
    unmatched = fix_outline(pdf, joined.headings)
    if unmatched:
        print(f"build_pdf: warning: {len(unmatched)} bookmarks match no heading and keep Chromium's title: "
              f"{unmatched[:5]}", file=sys.stderr)
    return count_pages(pdf), joined.formulas


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", default=str(ROOT / "build" / "html"), help="the built HTML book (make html)")
    parser.add_argument("--out", default=str(ROOT / "build" / "tformer.pdf"), help="the PDF to write")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        pages, formulas = build(Path(args.html), Path(args.out))
    except PdfError as err:
        print(f"build_pdf: {err}", file=sys.stderr)
        return 1
    print(f"build_pdf: {pages} pages, {formulas} formulas -> {args.out} in {time.perf_counter() - start:.1f} s")
    try:
        _, missing = missing_glyphs(Path(args.out))
    except PdfError as err:
        print(f"build_pdf: could not check the glyphs: {err}", file=sys.stderr)
        return 0
    for glyph in missing[:10]:
        print(f"build_pdf: warning: page {glyph.page}: a missing glyph (no font has it) in {glyph.context!r}"
              + (f", meant {glyph.intended!r}" if glyph.intended else ""), file=sys.stderr)
    if missing:
        print(f"build_pdf: warning: {len(missing)} missing glyphs in all", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
