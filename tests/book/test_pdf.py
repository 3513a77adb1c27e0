"""The book as one PDF (``make pdf``): pages, contents, internal links, typeset maths and no missing glyph.

The PDF is printed once per test session by ``tools/build_pdf.py`` from the HTML book, into pytest's temporary
folder (never into the checkout): from a copy of ``build/html`` when that build is up to date (the same rule as
test_html_book.py), otherwise from a fresh build of the stored notebooks. Under pytest-xdist the workers share one
print through a lock file in the session's temporary root. pypdf reads it back. Skipped when no Chromium binary is
found (Debian's ``chromium`` package prints the book) or there are no chapter notebooks.

The outline is compared with the headings of each chapter's markdown cells in the stored notebook, not with the
HTML, so a heading that never became one (a "## ..." line left in a code cell by a missing ``# %% [markdown]``
marker) shows up as a missing bookmark. Titles must be the headings' text exactly: Chromium's own titles join
wrapped lines without a space and repeat a line of a heading that starts a page, which ``build_pdf.fix_outline``
corrects.

The missing-glyph check (``build_pdf.missing_glyphs``) reads the glyph ids Chromium writes: a character that no
installed font has is printed as glyph 0, ``.notdef``, an empty box. ``test_the_glyph_check_finds_characters_no_font_has``
proves it can fail, on a small page holding characters from blocks no installed font covers.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_book  # noqa: E402
import build_pdf  # noqa: E402
import chromium as chromium_tools  # noqa: E402
import test_html_book as html_book  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not html_book.CHAPTERS, reason=f"no NN_title.ipynb notebooks in {html_book.NOTEBOOKS}"),
    pytest.mark.skipif(
        chromium_tools.find() is None,
        reason="no Chromium binary: make pdf prints the HTML book with headless Chromium (apt-get install -y chromium)",
    ),
]

# A chapter prints on 10 to 50 A4 pages (about 30 on average when this test was written): fewer means chapters
# went missing or printed blank, more means something (a code block, a table) broke into a page per line.
PAGES_PER_CHAPTER = (10, 50)
# The formulas MathJax is given in the HTML: elements of class "math" inside a page's article.
MATH_ELEMENT = re.compile(r'<(?:span|div)\b[^>]*\bclass="(?:[^"]*\s)?math(?:\s[^"]*)?"')
ARTICLE = re.compile(r'<article class="bd-article".*?</article>', re.DOTALL)
COLOPHON = re.compile(r"MathJax typeset (\d+) formulas with (\d+) errors")


@dataclass
class Printed:
    pdf: Path
    reader: object  # pypdf.PdfReader
    html_formulas: int  # formulas in the HTML book the PDF was printed from
    seconds: float  # the time to build (when needed) and print it


def _squash(text: str) -> str:
    """The words of a title run together (the PDF's outline drops the spaces where a heading wrapped), with
    ligatures and superscripts unfolded (the PDF's text has "ﬁ" where the notebook has "fi")."""
    return "".join(re.findall(r"\w+", unicodedata.normalize("NFKC", text))).lower()


def _html_formulas(html: Path) -> int:
    pages = [html / "index.html", *(html / f"{p.stem}.html" for p in html_book.CHAPTERS)]
    return sum(
        len(MATH_ELEMENT.findall(article))
        for page in pages
        for article in ARTICLE.findall(page.read_text(encoding="utf-8"))
    )


def _print_book(into: Path) -> dict:
    """Build (or copy) the HTML book into ``into``/html and print it to ``into``/tformer.pdf."""
    start = time.perf_counter()
    html = into / "html"
    shutil.rmtree(html, ignore_errors=True)
    existing = ROOT / "build" / "html"
    if html_book._is_fresh(existing):
        shutil.copytree(existing, html)
    else:
        html_book.build_quietly(html)
    partial = into / "tformer.partial.pdf"
    build_pdf.build(html, partial)
    partial.replace(into / "tformer.pdf")
    return {"html_formulas": _html_formulas(html), "seconds": time.perf_counter() - start}


@pytest.fixture(scope="session")
def printed(tmp_path_factory: pytest.TempPathFactory) -> Printed:
    """The book printed once per session: pytest-xdist workers share it through their common temporary root."""
    shared = (
        tmp_path_factory.getbasetemp().parent / "tformer-pdf"
        if os.environ.get("PYTEST_XDIST_WORKER")
        else tmp_path_factory.mktemp("tformer-pdf")
    )
    shared.mkdir(exist_ok=True)
    facts = shared / "facts.json"
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes; the first worker prints, others wait
        if not facts.is_file():
            facts.write_text(json.dumps(_print_book(shared)), encoding="utf-8")
    found = json.loads(facts.read_text(encoding="utf-8"))
    pdf = shared / "tformer.pdf"
    return Printed(pdf, build_pdf.read_pdf(pdf), found["html_formulas"], found["seconds"])


# A markdown heading commented out in a code cell: what a jupytext cell without its "# %% [markdown]" marker holds.
HEADING_IN_CODE = re.compile(r"^# (#{1,6}) (\S.*)$", re.MULTILINE)


def _notebook_headings(notebook: Path) -> list[tuple[int, str]]:
    """(level, text) of every heading in a notebook, as the book should print it: markdown-it (the parser MyST
    uses) finds the headings of markdown cells and drops their markup, docutils' smartquotes curls quotes as
    Sphinx does. A "# ## title" line in a code cell counts too (see HEADING_IN_CODE): the book must show it as a
    heading, so the cell has to become markdown."""
    from docutils.utils.smartquotes import smartyPants
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark")
    found = []
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code":
            source = "\n".join(f"{m[1]} {m[2]}" for m in HEADING_IN_CODE.finditer(source))
        elif cell["cell_type"] != "markdown":
            continue
        tokens = parser.parse(source)
        for opening, inline in itertools.pairwise(tokens):
            if opening.type == "heading_open":
                text = "".join(c.content for c in inline.children if c.type in {"text", "code_inline"})
                found.append((int(opening.tag[1]), " ".join(smartyPants(text, "qDe", "en").split())))
    return found


def _outline(printed: Printed) -> list[tuple[int, str, int]]:
    """(depth, title, 0-based page) of every bookmark in document order; depth 1 is the top level."""
    reader = printed.reader
    found: list[tuple[int, str, int]] = []

    def walk(items: list, depth: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
            else:
                found.append((depth, str(item.title), reader.get_destination_page_number(item)))

    walk(reader.outline, 1)
    return found


def _outline_by_chapter(printed: Printed) -> list[tuple[str, list[tuple[int, str]]]]:
    """Each top-level bookmark after the title page and Contents, with the (depth, title) of the bookmarks under it."""
    chapters: list[tuple[str, list[tuple[int, str]]]] = []
    for depth, title, _ in _outline(printed)[2:]:
        if depth == 1:
            chapters.append((title, []))
        elif chapters:
            chapters[-1][1].append((depth, title))
    return chapters


def _chapter_titles() -> list[str]:
    return [
        build_book.chapter_title(json.loads(p.read_text(encoding="utf-8")), p.name) for p in html_book.CHAPTERS
    ]


def _top_level_outline(printed: Printed) -> list[tuple[str, int]]:
    """(title, 0-based page) of each top-level bookmark: the title page, Contents, then one per chapter."""
    reader = printed.reader
    return [(str(item.title), reader.get_destination_page_number(item))
            for item in reader.outline if not isinstance(item, list)]


def _chapter_start_pages(printed: Printed) -> list[int]:
    return [page for _, page in _top_level_outline(printed)[2:]]


def _link_targets(printed: Printed, pages: range) -> tuple[list[int | None], int]:
    """The 0-based target page of every internal link on ``pages`` (None: unresolved), and the number of web links."""
    reader = printed.reader
    named = reader.named_destinations
    page_of = {page.indirect_reference.idnum: i for i, page in enumerate(reader.pages)}
    targets: list[int | None] = []
    web = 0
    for i in pages:
        for ref in reader.pages[i].get("/Annots") or []:
            annot = ref.get_object()
            if annot.get("/Subtype") != "/Link":
                continue
            action = annot.get("/A")
            action = action.get_object() if action is not None else None
            if action is not None and action.get("/S") == "/URI":
                web += 1
                continue
            dest = annot.get("/Dest") if action is None else action.get("/D")
            dest = dest.get_object() if hasattr(dest, "get_object") else dest
            if isinstance(dest, list):  # an explicit [page /XYZ ...] destination
                targets.append(page_of.get(dest[0].idnum))
            elif dest is not None and str(dest) in named:
                targets.append(reader.get_destination_page_number(named[str(dest)]))
            elif dest is not None and f"/{dest}" in named:
                targets.append(reader.get_destination_page_number(named[f"/{dest}"]))
            else:
                targets.append(None)
    return targets, web


def test_page_count_is_in_a_sane_band(printed: Printed) -> None:
    chapters = len(html_book.CHAPTERS)
    pages = len(printed.reader.pages)
    low, high = (k * chapters for k in PAGES_PER_CHAPTER)
    assert low <= pages <= high, f"{pages} pages for {chapters} chapters, expected {low}–{high}"


def test_outline_lists_title_contents_and_every_chapter_in_order(printed: Printed) -> None:
    outline = _top_level_outline(printed)
    titles = [title for title, _ in outline]
    assert len(titles) >= 2 and _squash(titles[0]) == _squash(build_book.BOOK_TITLE), titles[:2]
    assert _squash(titles[1]) == "contents", titles[:2]
    assert [_squash(t) for t in titles[2:]] == [_squash(t) for t in _chapter_titles()], (
        f"the PDF's bookmarks {titles[2:]} are not the chapters in order"
    )
    starts = [page for _, page in outline]
    assert starts == sorted(starts) and len(set(starts[1:])) == len(starts) - 1, (
        f"chapters must start on their own pages, in order: {starts}"
    )


def test_outline_titles_are_the_book_and_chapter_titles_exactly(printed: Printed) -> None:
    titles = [title for title, _ in _top_level_outline(printed)]
    expected = [build_book.BOOK_TITLE, "Contents"]
    expected += [next(text for level, text in _notebook_headings(p) if level == 1) for p in html_book.CHAPTERS]
    assert titles == expected, (
        f"top-level bookmarks differ from the titles (bookmark, title): "
        f"{[(t, e) for t, e in zip(titles, expected, strict=False) if t != e] or (titles, expected)}"
    )


def test_no_bookmark_repeats_its_text(printed: Printed) -> None:
    doubled = [title for _, title, _ in _outline(printed) if re.search(r"(\w{4,})\1", _squash(title))]
    assert not doubled, f"bookmarks with a run of text printed twice (a heading painted on two pages): {doubled}"


def test_every_chapter_bookmarks_its_sections_in_order(printed: Printed) -> None:
    """Under each chapter's bookmark: every heading of its markdown below the title, at its level, in order."""
    wrong = []
    for notebook, (chapter, got) in zip(html_book.CHAPTERS, _outline_by_chapter(printed), strict=True):
        expected = [(level, text) for level, text in _notebook_headings(notebook) if level > 1]
        if got != expected:
            missing = [h for h in expected if h not in got]
            extra = [h for h in got if h not in expected]
            wrong.append(f"{notebook.name} ({chapter!r}): missing {missing}, not headings {extra}"
                         if missing or extra else f"{notebook.name}: order {got} against {expected}")
    assert not wrong, "the outline differs from the chapters' headings (level, text):\n" + "\n".join(wrong)


def test_bookmarks_point_to_pages_in_reading_order(printed: Printed) -> None:
    outline = _outline(printed)
    backwards = [(title, page + 1) for (_, _, before), (_, title, page) in itertools.pairwise(outline) if page < before]
    assert not backwards, f"bookmarks pointing before the bookmark above them (title, page): {backwards}"


def test_contents_page_lists_every_chapter_in_order(printed: Printed) -> None:
    contents, first_chapter = _top_level_outline(printed)[1][1], _chapter_start_pages(printed)[0]
    text = _squash(" ".join(printed.reader.pages[i].extract_text() for i in range(contents, first_chapter)))
    position = 0
    for title in _chapter_titles():
        found = text.find(_squash(title), position)
        assert found >= 0, f"the contents (pages {contents + 1}–{first_chapter}) lack {title!r} after the chapters before it"
        position = found + 1


def test_contents_links_jump_to_every_chapter(printed: Printed) -> None:
    contents, first_chapter = _top_level_outline(printed)[1][1], _chapter_start_pages(printed)[0]
    targets, _ = _link_targets(printed, range(contents, first_chapter))
    assert None not in targets, f"a link on the contents page points to no destination in the PDF: {targets}"
    missing = [
        (title, page + 1)
        for title, page in zip(_chapter_titles(), _chapter_start_pages(printed), strict=True)
        if page not in targets
    ]
    assert not missing, f"no link on the contents page jumps to these chapters (title, page): {missing}"


def test_every_internal_link_lands_inside_the_document(printed: Printed) -> None:
    targets, web = _link_targets(printed, range(len(printed.reader.pages)))
    unresolved = targets.count(None)
    assert len(targets) >= len(html_book.CHAPTERS), f"only {len(targets)} internal links ({web} web links)"
    assert not unresolved, f"{unresolved} of {len(targets)} internal links point to no destination in the PDF"


def test_maths_is_typeset_every_formula(printed: Printed) -> None:
    colophon = printed.reader.pages[0].extract_text()
    found = COLOPHON.search(" ".join(colophon.split()))
    assert found is not None, f"the title page lacks the MathJax report: {colophon!r}"
    typeset, errors = int(found[1]), int(found[2])
    assert printed.html_formulas > 0, "the HTML book holds no formula (class 'math'): the count would prove nothing"
    assert (typeset, errors) == (printed.html_formulas, 0), (
        f"MathJax typeset {typeset} formulas with {errors} errors; the HTML holds {printed.html_formulas}"
    )


def test_no_page_has_a_missing_glyph(printed: Printed) -> None:
    checked, missing = build_pdf.missing_glyphs(printed.reader)
    pages = len(printed.reader.pages)
    assert checked >= 100 * pages, f"only {checked} glyphs read on {pages} pages: the scan missed the text"
    shown = [(g.page, g.font, g.context, g.intended) for g in missing[:10]]
    assert not missing, f"{len(missing)} characters printed as missing glyphs (page, font, text, meant): {shown}"


# Characters from blocks no font on a Debian machine with the book's fonts covers: a private-use codepoint,
# Tangut and Old Hungarian. fc-list (when present) confirms it here, with the fontconfig Chromium uses.
NO_FONT_HAS = ("\ue000", "\U00017000", "\U00010c80")


def test_the_glyph_check_finds_characters_no_font_has(tmp_path: Path) -> None:
    env = chromium_tools.environment(tmp_path)
    rare = [
        c for c in NO_FONT_HAS
        if shutil.which("fc-list") is None
        or not subprocess.run(["fc-list", f":charset={ord(c):x}", "family"], capture_output=True, text=True,
                              env=env, check=True).stdout.strip()
    ]
    assert rare, f"every one of {[f'U+{ord(c):04X}' for c in NO_FONT_HAS]} has a font here: pick rarer ones"
    page = tmp_path / "tofu.html"
    page.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>'
        f"<p>Fonts have 猫, √d_k, ﬁ and →; none has [{'] ['.join(rare)}].</p></body></html>",
        encoding="utf-8",
    )
    pdf = tmp_path / "tofu.pdf"
    build_pdf.print_pdf(page, pdf, budget_ms=2_000, timeout_s=120)
    checked, missing = build_pdf.missing_glyphs(pdf)
    assert checked >= 20, f"only {checked} glyphs read from the sample page"
    assert len(missing) == len(rare), (
        f"expected {len(rare)} missing glyphs for {[f'U+{ord(c):04X}' for c in rare]}, found {missing}"
    )
    assert all(g.page == 1 for g in missing)
