"""Print the offline HTML book to one PDF with headless Chromium (``make pdf``).

Usage::

    python tools/build_pdf.py [--html build/html] [--out build/tformer.pdf]

The book built by ``make html`` is joined into one page, ``_book_for_print.html`` beside the chapters (so every
image, stylesheet and the local MathJax resolve as they do for the chapters): a title page, the contents, then each
chapter's article on a new page. Every id is prefixed with its chapter and every link between chapters or within
one is rewritten to a same-document anchor, so Chromium writes them as internal PDF links; links to the web stay
web links; links to pages that are not in the PDF (search, index) become plain text. Chromium opens that page
offline (every host name unresolvable), lets MathJax finish (``--virtual-time-budget``), and prints it
(``--print-to-pdf``, no header or footer, a document outline from the headings). The colophon on the title page
states how many formulas MathJax typeset, counted in the browser after typesetting, and the test compares it with
the number of formulas in the HTML. Chromium's fontconfig also sees the Noto Sans CJK font shipped by the
``mplfonts`` dependency, so Chinese text prints in a real font. pypdf reads the result back to count its pages.

Exit status 0 on success; 1 with a message when the HTML book or Chromium is missing or printing fails.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
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
</style>"""


class PdfError(Exception):
    """A problem reported without a traceback."""


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


def join_book(html_dir: Path) -> tuple[Path, int]:
    """Write the single printable page into ``html_dir``; return its path and the number of formulas in it.

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
        section = out.new_tag("section", attrs={"class": "pdf-chapter", "id": stem})
        section.extend(list(article.children))
        book.append(section)
    out.body.append(body)
    out.body.append(BeautifulSoup(MATHJAX_REPORT, "html.parser"))
    page = html_dir / PRINT_PAGE
    page.write_text(str(out), encoding="utf-8")
    return page, len(out.select("span.math, div.math"))


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


def count_pages(pdf: Path) -> int:
    """The PDF's page count, read back with pypdf (Chromium already set the title from the page's <title>)."""
    import logging

    from pypdf import PdfReader

    # Chromium's PDFs declare a cross-reference size pypdf finds too small; pypdf repairs it and says so.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    return len(PdfReader(pdf).pages)


def build(html_dir: Path, pdf: Path) -> tuple[int, int]:
    """Print the HTML book in ``html_dir`` to ``pdf``; return (pages, formulas in the HTML).

    Raises:
        PdfError: on a missing book or Chromium, or a failed print.
    """
    page, formulas = join_book(html_dir)
    try:
        print_pdf(page, pdf)
    finally:
        page.unlink(missing_ok=True)
    return count_pages(pdf), formulas


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
    return 0


if __name__ == "__main__":
    sys.exit(main())
