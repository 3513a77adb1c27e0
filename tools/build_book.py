"""Build the offline HTML book from the stored notebook outputs (``make html``).

Usage::

    python tools/build_book.py [NOTEBOOK_DIR] [--out build/html] [--no-strict]

Chapters are the notebooks named ``NN_title.ipynb`` in ``NOTEBOOK_DIR`` (default ``notebooks/``), in file-name
order; a chapter's title is its first markdown heading. Nothing is executed: Sphinx with MyST-NB renders the outputs
stored in each ``.ipynb`` (the ones nbval checks), with sphinx-book-theme for the contents sidebar, previous/next
links and a search box. Maths is typeset by a local copy of MathJax 3 taken from the ``django-static-mathjax``
wheel, so the site works from ``file://`` with no network. The Sphinx configuration lives in ``book/conf.py``.

The same staged pages are then built a second time with ``language=zh_CN`` into ``OUT/zh_CN/``: the Chinese edition,
whose prose comes from the catalogues in ``locale/zh_CN/`` (``tools/catalogue.py``), with a 术语表 page made from
``locale/zh_CN/glossary.tsv``; code and stored outputs are the same. Each edition gets its own CJK font subset.

Exit status 0 on success; 1 with a message naming the notebook when a chapter has no heading, and Sphinx's own
message when it reports a warning (strict by default, so a broken cross-reference or image fails the build).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import io
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import book_font

ROOT = Path(__file__).resolve().parent.parent
BOOK_DIR = ROOT / "book"
CHAPTER_RE = re.compile(r"^\d{2}_[A-Za-z0-9_\-]+\.ipynb$")
HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
ASSET_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"}
MATHJAX_DIST = "django-static-mathjax"
MATHJAX_FILE = "mathjax/static/mathjax/es5/tex-svg-full.js"
# The Colab badge image lives on the web; the offline book shows a local copy (the link target stays the same).
COLAB_BADGE_URL = "https://colab.research.google.com/assets/colab-badge.svg"
LOCAL_BADGE = "_static/colab-badge.svg"
BOOK_TITLE = "tformer: from RNNs to the Transformer"
INTRO = (
    "A runnable textbook that goes from recurrent networks to the Transformer, one notebook per chapter, "
    "backed by the small PyTorch package `tformer`. This offline edition shows the outputs stored in the "
    "notebooks; to run the code, open the notebooks in JupyterLab (`make lab`) or in Colab."
)
LOCALE_DIR = ROOT / "locale"
ZH = "zh_CN"
ZH_TITLE = "tformer：从 RNN 到 Transformer"
ZH_AUTHORS = "tformer 作者团队"  # the footer's author and copyright line, in Chinese


class BookError(Exception):
    """A problem with the notebooks or the environment, reported without a traceback."""


def find_chapters(src: Path) -> list[Path]:
    """Return the chapter notebooks ``NN_title.ipynb`` in ``src``, sorted by file name.

    Raises:
        BookError: if ``src`` is not a folder or holds no chapter notebook.
    """
    if not src.is_dir():
        raise BookError(f"notebook folder: expected a directory, got {src}")
    chapters = sorted(p for p in src.iterdir() if p.is_file() and CHAPTER_RE.match(p.name))
    if not chapters:
        raise BookError(f"{src}: no chapter notebooks named NN_title.ipynb")
    return chapters


def chapter_title(notebook: dict, name: str) -> str:
    """Return the text of the first markdown heading of a notebook (the chapter title).

    Raises:
        BookError: naming the notebook when no markdown cell has a heading.
    """
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        match = HEADING_RE.search(source)
        if match:
            return match.group(2)
    raise BookError(f"{name}: no markdown heading; the first heading is the chapter title")


def stage_notebook(path: Path, dest: Path) -> str:
    """Copy one chapter into the staging folder with the Colab badge pointed at the local copy; return its title."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    title = chapter_title(notebook, path.name)
    # Widgets need a live kernel; their saved state would make the page fetch ipywidgets' scripts from the web.
    notebook.get("metadata", {}).pop("widgets", None)
    for cell in notebook["cells"]:
        if cell.get("cell_type") == "markdown":
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            cell["source"] = source.replace(COLAB_BADGE_URL, LOCAL_BADGE)
    (dest / path.name).write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")
    return title


def mathjax_file() -> Path:
    """Locate MathJax 3's single-file SVG bundle inside the installed ``django-static-mathjax`` wheel.

    Raises:
        BookError: if the package is not installed.
    """
    try:
        dist = importlib.metadata.distribution(MATHJAX_DIST)
    except importlib.metadata.PackageNotFoundError as err:
        raise BookError(f"{MATHJAX_DIST} is not installed (pip install -r requirements.txt)") from err
    path = Path(str(dist.locate_file(MATHJAX_FILE)))
    if not path.is_file():
        raise BookError(f"{MATHJAX_DIST}: expected {MATHJAX_FILE}, not found at {path}")
    return path


def write_index(staging: Path, names: list[str]) -> None:
    """Write the contents page, ``index.md``, listing ``names`` in order."""
    toctree = "\n".join(names)
    index = (
        f"# {BOOK_TITLE}\n\n{INTRO}\n\n```{{toctree}}\n:maxdepth: 1\n:caption: Chapters\n\n{toctree}\n```\n"
    )
    (staging / "index.md").write_text(index, encoding="utf-8")


def stage(src: Path, staging: Path) -> list[tuple[str, str]]:
    """Fill ``staging`` with the Sphinx sources; return (page name, title) for each chapter in order."""
    shutil.copy2(BOOK_DIR / "conf.py", staging / "conf.py")
    shutil.copytree(BOOK_DIR / "_static", staging / "_static")
    shutil.copytree(BOOK_DIR / "_templates", staging / "_templates")
    (staging / "_mathjax" / "mathjax").mkdir(parents=True)
    shutil.copy2(mathjax_file(), staging / "_mathjax" / "mathjax" / "tex-svg-full.js")
    # Images that markdown cells link to (e.g. notebooks/figures/x.png), keeping their relative paths.
    for asset in src.rglob("*"):
        rel = asset.relative_to(src)
        if (
            asset.is_file()
            and asset.suffix.lower() in ASSET_SUFFIXES
            and not any(part.startswith(".") or part in {"_build", "__pycache__"} for part in rel.parts)
        ):
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(asset, staging / rel)
    pages = [(path.stem, stage_notebook(path, staging)) for path in find_chapters(src)]
    write_index(staging, [name for name, _ in pages])
    # The Chinese edition's catalogues, list of translated pages and <details> titles (book/conf.py reads them).
    if (LOCALE_DIR / ZH).is_dir():
        shutil.copytree(LOCALE_DIR / ZH, staging / "locale" / ZH, ignore=shutil.ignore_patterns("*.mo"))
    return pages


def glossary_page() -> str:
    """The Chinese edition's 术语表 page (MyST markdown): the glossary's terms, then the renderings never used."""
    import catalogue

    terms = "\n".join(f"| {chinese} | {english.replace('|', ' / ')} | {source} |"
                       for english, chinese, _, source in catalogue.rows(catalogue.GLOSSARY))
    never = "\n".join(f"| {bad} | {use} |" for bad, use in catalogue.load_banned().items())
    return (
        "# 术语表\n\n中文版中每个术语只用一种译法：优先采用本书所依据原文的说法，原文没有的参照《动手学深度学习》"
        "（d2l-zh）；“依据”一栏注明出处。英文一栏中的“/”分隔同一术语的几种写法。\n\n"
        "| 中文 | English | 依据 |\n|---|---|---|\n" + terms
        + "\n\n## 不用的译法\n\n机器翻译常见、本书不用的译法：\n\n| 不用 | 改用 |\n|---|---|\n" + never + "\n"
    )


def _sphinx(args: list[str], staging: Path, out: Path) -> tuple[int, str]:
    """Run Sphinx once; return its status and its warnings (which name the staged copies)."""
    from sphinx.cmd.build import build_main

    # Sphinx writes warnings to stderr; catch them to name the notebooks in src/, not their staged copies.
    with contextlib.redirect_stderr(io.StringIO()) as captured:
        status = build_main([*args, str(staging), str(out)])
    return status, captured.getvalue()


def build(src: Path, out: Path, *, strict: bool = True, quiet: bool = True) -> list[tuple[str, str]]:
    """Build the book from the notebooks in ``src`` into ``out`` (replaced); return (page, title) per chapter.

    Raises:
        BookError: on a notebook without a heading, a missing MathJax package, or a failed Sphinx build.
    """
    try:
        import sphinx  # noqa: F401
    except ImportError as err:
        raise BookError("Sphinx is not installed (pip install -r requirements.txt)") from err
    if out.exists() and any(out.iterdir()) and not (out / ".buildinfo").is_file():
        raise BookError(f"--out {out}: not empty and not an earlier book build; refusing to replace it")

    with tempfile.TemporaryDirectory(prefix="tformer-book-") as tmp:
        staging = Path(tmp) / "src"
        staging.mkdir()
        pages = stage(src, staging)
        if out.exists():
            shutil.rmtree(out)
        args = ["-b", "html", "-n"]
        args += ["-q"] if quiet else []
        args += ["-W", "--keep-going"] if strict else []
        status, warnings = _sphinx([*args, "-d", str(Path(tmp) / "doctrees")], staging, out)
        if status == 0 and (staging / "locale" / ZH).is_dir():
            # The Chinese edition: the same staged pages and stored outputs, prose from the catalogues, plus 术语表.
            (staging / "glossary.md").write_text(glossary_page(), encoding="utf-8")
            write_index(staging, [*(name for name, _ in pages), "glossary"])
            zh_args = [*args, "-d", str(Path(tmp) / "doctrees-zh"), "-D", f"language={ZH}",
                       "-D", f"html_title={ZH_TITLE}", "-D", f"author={ZH_AUTHORS}", "-D", f"copyright={ZH_AUTHORS}"]
            status, zh_warnings = _sphinx(zh_args, staging, out / ZH)
            warnings += zh_warnings
    warnings = warnings.replace(f"{staging}{os.sep}", f"{src}{os.sep}").strip()
    if warnings:
        print(warnings, file=sys.stderr)
    if status != 0:
        raise BookError(
            f"sphinx-build failed with status {status} ({'warnings above; ' if warnings else ''}"
            "--no-strict to build in spite of warnings)"
        )
    try:  # the pages' CJK characters as a font of their own (book/conf.py links its stylesheet)
        book_font.add_font(out)
        if (out / ZH).is_dir():
            book_font.add_font(out / ZH)
    except FileNotFoundError as err:
        raise BookError(str(err)) from err
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "src", nargs="?", default=str(ROOT / "notebooks"), help="folder of NN_title.ipynb files"
    )
    parser.add_argument("--out", default=str(ROOT / "build" / "html"), help="output folder (replaced)")
    parser.add_argument("--no-strict", action="store_true", help="do not fail on Sphinx warnings")
    parser.add_argument("--verbose", action="store_true", help="show Sphinx's progress messages")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        pages = build(Path(args.src), Path(args.out), strict=not args.no_strict, quiet=not args.verbose)
    except BookError as err:
        print(f"build_book: {err}", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - start
    for name, title in pages:
        print(f"  {name}.html  {title}")
    print(f"build_book: {len(pages)} chapters -> {Path(args.out) / 'index.html'} in {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
