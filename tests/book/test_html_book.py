"""The offline HTML book (``make html``): built pages link up, images resolve, and Chromium typesets the maths offline.

The book is built from the stored notebooks with ``tools/build_book.py`` into a temporary folder, unless
``build/html`` is newer than every notebook and every builder file, in which case that build is checked. The
browser checks open ``file://`` pages in headless Chromium (Debian's ``chromium`` package) with every host name
mapped to "not found", so anything fetched from the web would fail; they are skipped only when no Chromium binary
is found. Environment:

- ``TFORMER_NOTEBOOKS``: notebook folder to build from (default ``notebooks/``).
- ``TFORMER_SCREENSHOTS=1``: also save ``docs/screenshot_contents.png`` (as tall as the whole list of chapters),
  ``docs/screenshot_chapter05.png`` and its Chinese twin ``docs/screenshot_chapter05_zh.png``.
- ``TFORMER_HTML_ALL_PAGES=1``: check the maths on every chapter page, not only chapter 05 (or the first).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import build_book  # noqa: E402
import chromium as chromium_tools  # noqa: E402

NOTEBOOKS = Path(os.environ.get("TFORMER_NOTEBOOKS", ROOT / "notebooks"))
DOCS = ROOT / "docs"
# the project's shared tooling notes on headless Chromium (tools/chromium.py: offline, every host name unresolvable), plus time for MathJax.
CHROMIUM_FLAGS = (
    *chromium_tools.OFFLINE_FLAGS,
    "--virtual-time-budget=15000",
)
# TeX delimiters that MathJax should have replaced; found in prose text they mean the maths stayed raw.
RAW_MATH = re.compile(r"\$\$.+?\$\$|(?<![\\\w])\$[^$\s][^$]*?(?<!\s)\$(?!\w)|\\\(|\\\[|\\begin\{", re.DOTALL)

CHAPTERS = (
    sorted(p for p in NOTEBOOKS.glob("*.ipynb") if build_book.CHAPTER_RE.match(p.name))
    if NOTEBOOKS.is_dir()
    else []
)
pytestmark = pytest.mark.skipif(not CHAPTERS, reason=f"no NN_title.ipynb notebooks in {NOTEBOOKS}")


def _is_fresh(out: Path) -> bool:
    """True when ``out/index.html`` is newer than the notebooks and the builder, so it shows them as they are."""
    index = out / "index.html"
    if NOTEBOOKS.resolve() != (ROOT / "notebooks").resolve() or not index.is_file():
        return False
    sources = [
        *CHAPTERS,
        ROOT / "tools" / "build_book.py",
        *(p for p in (ROOT / "book").rglob("*") if p.is_file()),
        *(p for p in (ROOT / "locale").rglob("*") if p.is_file()),
    ]
    built = {p.stem for p in out.glob("*.html")}
    return all(p.stem in built for p in CHAPTERS) and index.stat().st_mtime > max(
        p.stat().st_mtime for p in sources
    )


def build_quietly(out: Path) -> Path:
    """Build the book from ``NOTEBOOKS`` into ``out`` (also used by test_pdf.py); return ``out``."""
    with (
        warnings.catch_warnings()
    ):  # Sphinx's notices of its own future API changes, raised by the extensions
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        build_book.build(NOTEBOOKS, out)
    return out


@pytest.fixture(scope="module")
def book() -> Iterator[Path]:
    """The built book folder (a fresh build in a temporary folder unless build/html is up to date)."""
    existing = ROOT / "build" / "html"
    if _is_fresh(existing):
        yield existing
        return
    with tempfile.TemporaryDirectory(prefix="tformer-html-") as tmp:
        yield build_quietly(Path(tmp) / "html")


def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _local_target(page: Path, url: str) -> Path | None:
    """The file a relative URL points to, or None for web, mailto, data and same-page anchors."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    return (page.parent / unquote(parts.path)).resolve()


def _chapter_pages(book: Path) -> list[Path]:
    return [book / f"{p.stem}.html" for p in CHAPTERS]


def _feature_page(book: Path) -> Path:
    """Chapter 05's page when there is one, otherwise the first chapter's."""
    fives = [p for p in _chapter_pages(book) if p.name.startswith("05_")]
    return fives[0] if fives else _chapter_pages(book)[0]


# A markdown heading commented out in a code cell: a jupytext cell whose "# %% [markdown]" marker is missing.
HEADING_IN_CODE = re.compile(r"^# #{1,6} \S.*$", re.MULTILINE)


def test_no_markdown_heading_is_left_in_a_code_cell() -> None:
    """A "# ## ..." line in a code cell is a section whose markdown cell lost its marker: the book would show it as
    a comment in the code, and the HTML's contents sidebar and the PDF's outline would miss the section."""
    found = [
        (notebook.name, line)
        for notebook in CHAPTERS
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        if cell["cell_type"] == "code"
        for line in HEADING_IN_CODE.findall("".join(cell["source"]))
    ]
    assert not found, f"markdown headings inside code cells (add '# %% [markdown]' above them in the .py): {found}"


def test_contents_page_links_every_chapter_in_order(book: Path) -> None:
    index = book / "index.html"
    soup = _soup(index)
    links = [a["href"] for a in soup.select("article a.reference.internal[href]")]
    expected = [page.name for page in _chapter_pages(book)]
    assert [urlsplit(h).path for h in links if urlsplit(h).path in expected] == expected
    for a in soup.find_all("a", href=True):
        target = _local_target(index, a["href"])
        assert target is None or target.is_file(), f"index.html: link {a['href']!r} points to a missing file"


def test_chapter_pages_have_title_and_previous_next(book: Path) -> None:
    pages = _chapter_pages(book)
    for i, (notebook, page) in enumerate(zip(CHAPTERS, pages, strict=True)):
        assert page.is_file(), f"{notebook.name}: no page {page.name}"
        soup = _soup(page)
        title = build_book.chapter_title(json.loads(notebook.read_text(encoding="utf-8")), notebook.name)
        words = set(re.findall(r"\w+", title))  # the heading's words, whatever markdown or TeX surrounds them
        h1 = soup.find("h1")
        assert h1 is not None and words <= set(re.findall(r"\w+", h1.get_text())), (
            f"{page.name}: first <h1> is not the chapter title {title!r}"
        )
        assert words <= set(re.findall(r"\w+", soup.title.get_text())), (
            f"{page.name}: <title> lacks the chapter title {title!r}"
        )
        prev = soup.select_one("a.left-prev")
        nxt = soup.select_one("a.right-next")
        assert prev is not None and urlsplit(prev["href"]).path == (pages[i - 1].name if i else "index.html")
        if i + 1 < len(pages):
            assert nxt is not None and urlsplit(nxt["href"]).path == pages[i + 1].name
        assert soup.select_one("form.bd-search, .search-button-field, button.search-button") is not None


def test_every_image_and_internal_link_resolves_and_nothing_is_fetched_from_the_web(book: Path) -> None:
    for page in [book / "index.html", *_chapter_pages(book)]:
        soup = _soup(page)
        for img in soup.find_all("img"):
            src = img.get("src", "")
            assert src, f"{page.name}: <img> without src"
            if src.startswith("data:"):
                continue
            target = _local_target(page, src)
            assert target is not None and target.is_file(), f"{page.name}: image {src!r} is not a local file"
        for a in soup.find_all("a", href=True):
            target = _local_target(page, a["href"])
            assert target is None or target.is_file(), (
                f"{page.name}: link {a['href']!r} points to a missing file"
            )
        for tag, attr in (("script", "src"), ("link", "href"), ("iframe", "src")):
            for el in soup.find_all(tag):
                url = el.get(attr)
                if url and (tag != "link" or {"stylesheet", "preload", "icon"} & set(el.get("rel", []))):
                    assert not urlsplit(url).scheme.startswith("http"), f"{page.name}: <{tag}> loads {url}"


def test_mathjax_is_served_locally(book: Path) -> None:
    assert (book / "_static" / "mathjax" / "tex-svg-full.js").is_file(), "local MathJax missing from _static/"
    pages = [p for p in [book / "index.html", *_chapter_pages(book)] if _soup(p).select(".math")]
    for page in pages:
        scripts = [s.get("src", "") for s in _soup(page).find_all("script")]
        mathjax = [s for s in scripts if "mathjax" in s.lower()]
        assert len(mathjax) == 1, f"{page.name}: expected one MathJax script, got {mathjax}"
        assert (page.parent / urlsplit(mathjax[0]).path).is_file(), (
            f"{page.name}: {mathjax[0]} is not a local file"
        )


# ---------------------------------------------------------------------------------------------- headless Chromium


def _chromium() -> str:
    found = chromium_tools.find()
    if found:
        return found
    pytest.skip("no Chromium binary (apt-get install -y chromium)")


@pytest.fixture(scope="module")
def browser_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for Chromium: fontconfig also sees the Noto Sans CJK font shipped by the mplfonts dependency."""
    return chromium_tools.environment(tmp_path_factory.mktemp("chromium"))


def _run_chromium(env: dict[str, str], *args: str) -> str:
    profile = tempfile.mkdtemp(prefix="tformer-chromium-")
    try:
        done = subprocess.run(
            [_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert done.returncode == 0, f"chromium exited {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


def _raw_math_in_prose(soup: BeautifulSoup) -> list[str]:
    """Text outside code cells, code, scripts and typeset maths that still looks like TeX."""
    for el in soup.select("div.cell, pre, code, script, style, mjx-container, textarea"):
        el.decompose()
    main = soup.select_one("article") or soup
    return RAW_MATH.findall(main.get_text(" "))


def test_chromium_typesets_the_maths_offline(book: Path, browser_env: dict[str, str]) -> None:
    pages = [p for p in _chapter_pages(book) if _soup(p).select(".math")]
    if os.environ.get("TFORMER_HTML_ALL_PAGES") != "1":
        feature = _feature_page(book)
        pages = [feature] if feature in pages else pages[:1]
    if not pages:
        pytest.skip("no chapter page has maths")
    for page in pages:
        static = _soup(page)
        n_math = len(static.select("span.math, div.math"))
        dom = BeautifulSoup(_run_chromium(browser_env, "--dump-dom", page.as_uri()), "html.parser")
        containers = dom.select("span.math mjx-container, div.math mjx-container")
        assert len(containers) >= n_math, (
            f"{page.name}: {len(containers)} of {n_math} formulas typeset by MathJax"
        )
        assert not dom.select("mjx-merror"), f"{page.name}: MathJax reported a TeX error"
        assert all(c.find("svg") is not None for c in containers), f"{page.name}: MathJax output without SVG"
        leftover = _raw_math_in_prose(dom)
        assert not leftover, f"{page.name}: maths left as raw TeX: {leftover[:5]}"


def _assert_not_blank(png: Path) -> None:
    from PIL import Image

    with Image.open(png) as im:
        lo, hi = im.convert("L").getextrema()
    assert hi - lo > 100, f"{png}: screenshot is blank"


# A script added to a copy of the contents page: after load it records, on <body>, how far down (px) the chapter
# links reach in the article and in the sidebar (laid out in full there even where the sidebar scrolls).
_CONTENTS_PROBE = """<script>window.addEventListener("load", () => {
  const bottom = (selector) => Math.max(0, ...Array.from(document.querySelectorAll(selector),
    (el) => el.getBoundingClientRect().bottom + window.scrollY));
  document.body.setAttribute("data-contents", JSON.stringify({
    links: document.querySelectorAll("article a.reference.internal").length,
    article: bottom("article a.reference.internal"),
    sidebar: bottom(".bd-sidebar-primary a.reference.internal"),
  }));
});</script>"""
SCREENSHOT_WIDTH = 1280


def _probe_page(page: Path, script: str, attribute: str, env: dict[str, str], window: str) -> dict:
    """Load a copy of ``page`` with ``script`` appended in Chromium; return the JSON it left in ``attribute``.

    The copy sits beside the page (so every relative link resolves) and is removed afterwards.
    """
    probe = page.with_name(f"_probe_{os.getpid()}_{page.name}")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", script + "</body>"), encoding="utf-8")
    try:
        dom = _run_chromium(env, f"--window-size={window}", "--dump-dom", probe.as_uri())
    finally:
        probe.unlink()
    found = BeautifulSoup(dom, "html.parser").body.get(attribute)
    assert found is not None, f"{page.name}: the {attribute} probe did not run"
    return json.loads(found)


def _contents_bottom(book: Path, env: dict[str, str]) -> int:
    """How far down (px) the contents page's chapter list reaches, in the article or in the sidebar."""
    reach = _probe_page(book / "index.html", _CONTENTS_PROBE, "data-contents", env, f"{SCREENSHOT_WIDTH},900")
    assert reach["links"] >= len(CHAPTERS), f"index.html: {reach['links']} chapter links for {len(CHAPTERS)} chapters"
    return int(max(reach["article"], reach["sidebar"]))


@pytest.mark.skipif(
    os.environ.get("TFORMER_SCREENSHOTS") != "1", reason="set TFORMER_SCREENSHOTS=1 to save them"
)
def test_screenshots_for_the_readme(book: Path, browser_env: dict[str, str]) -> None:
    DOCS.mkdir(exist_ok=True)
    shots = [
        # Tall enough for every chapter, in the article and in the sidebar (which scrolls on its own), and for the
        # page's footer (about 80 px at the bottom of the window) below them.
        (book / "index.html", DOCS / "screenshot_contents.png",
         f"{SCREENSHOT_WIDTH},{_contents_bottom(book, browser_env) + 120}"),
        (_feature_page(book), DOCS / "screenshot_chapter05.png", "1280,1800"),
        (book / "zh_CN" / _feature_page(book).name, DOCS / "screenshot_chapter05_zh.png", "1280,1800"),
    ]
    for page, png, size in shots:
        png.unlink(missing_ok=True)
        _run_chromium(browser_env, f"--window-size={size}", f"--screenshot={png}", page.as_uri())
        assert png.is_file(), f"no screenshot written for {page.name}"
        _assert_not_blank(png)


def test_readme_contents_screenshot_shows_every_chapter(book: Path, browser_env: dict[str, str]) -> None:
    """docs/screenshot_contents.png is as tall as the chapter list is now (make screenshots refreshes it; this test
    comes after the one that does, so it checks the fresh picture there)."""
    from PIL import Image

    needed = _contents_bottom(book, browser_env)
    with Image.open(DOCS / "screenshot_contents.png") as im:
        size = im.size
    assert size[0] == SCREENSHOT_WIDTH and size[1] >= needed, (
        f"docs/screenshot_contents.png is {size[0]}x{size[1]} px; the chapter list reaches down to {needed} px"
        f" at {SCREENSHOT_WIDTH} px wide (make screenshots)"
    )


# A script added to a copy of a page: after load it records, on <body>, every code or output block whose content
# is wider than its frame (scrollWidth > clientWidth), i.e. text a reader would have to scroll to, or cannot see.
_OVERFLOW_PROBE = """<script>window.addEventListener("load", () => {
  const wide = [];
  const blocks = document.querySelectorAll("article pre, article div.highlight, article div.cell_output");
  for (const el of blocks) {
    if (el.scrollWidth > el.clientWidth + 1) {
      wide.push([el.scrollWidth, el.clientWidth, el.textContent.trim().slice(0, 70)]);
    }
  }
  document.body.setAttribute("data-overflow", JSON.stringify({blocks: blocks.length, wide: wide}));
});</script>"""


def _longest_code_line_page(book: Path) -> Path:
    """The chapter page whose code or output blocks hold the longest line."""

    def longest(page: Path) -> int:
        return max((len(line) for pre in _soup(page).select("article pre") for line in pre.get_text().split("\n")),
                   default=0)

    return max(_chapter_pages(book), key=longest)


@pytest.mark.parametrize("width", [1280, 800])
def test_no_code_block_is_cut_at_the_right_edge(book: Path, browser_env: dict[str, str], width: int) -> None:
    pages = _chapter_pages(book) if os.environ.get("TFORMER_HTML_ALL_PAGES") == "1" else sorted(
        {_longest_code_line_page(book), _feature_page(book)}
    )
    for page in pages:
        longest = max(len(line) for pre in _soup(page).select("article pre") for line in pre.get_text().split("\n"))
        result = _probe_page(page, _OVERFLOW_PROBE, "data-overflow", browser_env, f"{width},1000")
        assert result["blocks"] > 0, f"{page.name}: no code blocks found"
        assert not result["wide"], (
            f"{page.name} at {width} px (longest line {longest} columns): code cut at the right edge, "
            f"(content px, frame px, start): {result['wide'][:3]}"
        )


def test_worked_answers_are_closed_toggles(book: Path) -> None:
    """Each 'why' question's worked answer is a closed <details> with a summary, its markdown rendered inside."""
    pages = [p for p in _chapter_pages(book) if p.name.startswith(("05_", "06_"))]
    for page in pages:
        toggles = _soup(page).find_all("details")
        assert toggles, f"{page.name}: no <details> toggle for the worked answer"
        for toggle in toggles:
            assert toggle.find("summary") is not None and not toggle.has_attr("open")
            assert toggle.find("p") is not None, f"{page.name}: the answer's markdown was not rendered"


def test_measured_blocks_are_closed_toggles_with_rendered_markdown(book: Path) -> None:
    """Each "How this was measured" block is a closed, styled <details> whose markdown, maths and result markers
    came through: paragraphs, no raw ``**`` emphasis, the markers kept as HTML comments (see test_measured_blocks.py)."""
    from bs4 import Comment

    sources = {p.stem: p.read_text(encoding="utf-8") for p in CHAPTERS}
    for page in _chapter_pages(book):
        blocks = _soup(page).select("details.measured")
        expected = sources[page.stem].count('<details class=\\"measured\\">')  # as JSON writes it
        assert len(blocks) == expected, f"{page.name}: {len(blocks)} measured blocks rendered, {expected} in the source"
        for block in blocks:
            summary = block.find("summary")
            assert summary is not None and summary.get_text(strip=True), f"{page.name}: a block without a summary"
            assert not block.has_attr("open"), f"{page.name}: a block renders open"
            assert block.find(["p", "ul", "ol", "table"]) is not None, f"{page.name}: the block's markdown did not render"
            assert "**" not in block.get_text(), f"{page.name}: raw markdown in a block: {block.get_text()[:120]!r}"
            if "<!-- result:" in str(block):
                assert any(isinstance(c, Comment) and "result:" in c for c in block.find_all(string=True))
    assert 'href="_static/book.css' in (_chapter_pages(book)[0]).read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------------------------
# The Chinese edition (build/html/zh_CN/): a twin of every page, linked both ways, translated where the catalogue is.

CJK = re.compile(r"[\u4e00-\u9fff]")


def _translated() -> set[str]:
    import catalogue

    return set(catalogue.translated_pages())


def _switch(page: Path) -> Path:
    links = _soup(page).select("a.tformer-lang-switch")
    assert len(links) == 1, f"{page.name}: {len(links)} language switches"
    return (page.parent / links[0]["href"]).resolve()


def test_every_page_has_a_chinese_twin_linked_both_ways(book: Path) -> None:
    zh = book / "zh_CN"
    for page in [book / "index.html", *_chapter_pages(book)]:
        twin = zh / page.name
        assert twin.is_file(), f"no Chinese twin of {page.name}"
        assert _switch(page) == twin.resolve() and _switch(twin) == page.resolve(), page.name
        assert _soup(twin).html.get("lang") == "zh-CN"
    assert (zh / "glossary.html").is_file() and "术语表" in _soup(zh / "index.html").get_text()


def test_translated_pages_are_chinese_and_the_others_say_they_are_not(book: Path) -> None:
    translated = _translated()
    for page in _chapter_pages(book):
        soup = _soup(book / "zh_CN" / page.name)
        note = soup.select(".tformer-untranslated")
        title = soup.select_one("article h1").get_text()
        if page.stem in translated:
            assert not note and CJK.search(title), f"{page.name}: title {title!r}, note {bool(note)}"
            english = [s.get_text() for s in soup.select("summary") if not CJK.search(s.get_text())]
            assert english == [], f"{page.name}: block titles left in English: {english}"
            # the result markers survive translation into the built page
            count = page.read_text(encoding="utf-8").count("<!-- result:")
            assert (book / "zh_CN" / page.name).read_text(encoding="utf-8").count("<!-- result:") == count
        else:
            assert len(note) == 1 and not CJK.search(title), page.name


# A probe: is the language switch drawn where a reader can click it (the element at its centre and at its top
# edge is the switch itself, not the sticky top bar over it)?
_SWITCH_PROBE = """<script>window.addEventListener("load", () => {
  const a = document.querySelector("a.tformer-lang-switch");
  const r = a.getBoundingClientRect();
  const hit = (y) => { const el = document.elementFromPoint(r.left + r.width / 2, y); return !!el && a.contains(el); };
  document.body.setAttribute("data-switch", JSON.stringify({
    centre: hit(r.top + r.height / 2), top: hit(r.top + 2), height: r.height }));
});</script>"""


@pytest.mark.parametrize("edition", ["", "zh_CN"])
def test_the_language_switch_is_visible(book: Path, browser_env: dict[str, str], edition: str) -> None:
    page = book / edition / _feature_page(book).name
    found = _probe_page(page, _SWITCH_PROBE, "data-switch", browser_env, "1280,900")
    assert found["centre"] and found["top"] and found["height"] > 10, found


def test_chinese_search_finds_chinese_words(book: Path) -> None:
    script = (book / "zh_CN" / "searchindex.js").read_text(encoding="utf-8")
    terms = json.loads(script[script.index("(") + 1:script.rindex(")")])["terms"]
    assert {"注意力", "词元", "查询"} <= set(terms)  # Sphinx splits Chinese into words only with jieba
