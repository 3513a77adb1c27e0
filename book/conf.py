"""Sphinx configuration for the offline HTML book (used by ``tools/build_book.py``; not meant for ``sphinx-build`` alone).

The builder stages this file with the chapter notebooks, an ``index.md`` contents page and a local copy of MathJax 3
(from the ``django-static-mathjax`` wheel), then runs Sphinx. Notebooks are never executed: their stored outputs,
already checked by nbval, are rendered as they are. Nothing in the built site refers to a network address except
plain ``<a href>`` links (the "Open in Colab" badge's target, the papers cited in the prose).
"""

from pathlib import Path

project = "tformer"
author = "the tformer authors"
copyright = "the tformer authors"
html_title = "tformer: from RNNs to the Transformer"

extensions = ["myst_nb"]

# Render the outputs stored in the .ipynb files; never start a kernel.
nb_execution_mode = "off"
nb_merge_streams = True

# Jupyter-style maths in markdown cells: $...$, $$...$$ and bare \begin{align} ... \end{align}.
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# Local MathJax 3 (SVG output: a single file, no web fonts to fetch). The builder copies tex-svg-full.js to
# _static/mathjax/; a non-empty mathjax3_config makes Sphinx and myst emit the MathJax 3 configuration.
mathjax_path = "mathjax/tex-svg-full.js"
mathjax3_config = {"svg": {"fontCache": "global"}}

html_theme = "sphinx_book_theme"
html_static_path = ["_static", "_mathjax"]
html_css_files = ["book.css", "tformer-cjk.css"]  # the second is written by tools/book_font.py
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_theme_options = {
    "show_toc_level": 2,
    "show_navbar_depth": 1,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "navigation_with_keys": False,
}

exclude_patterns = ["_build", "**.ipynb_checkpoints", "_mathjax", "locale"]
# A chapter may jump from "#" to "###"; that is a style choice, not a broken page.
suppress_warnings = ["myst.header"]

# The Chinese edition (tools/build_book.py builds it with -D language=zh_CN into build/html/zh_CN/): prose from the
# catalogues in locale/zh_CN/LC_MESSAGES/ (one per page), code and stored outputs shared with the English book.
locale_dirs = ["locale/"]
gettext_compact = False
gettext_location = False
templates_path = ["_templates"]
html_theme_options["article_header_end"] = ["lang-switch.html", "article-header-buttons.html"]

_ZH = Path(__file__).parent / "locale" / "zh_CN"
_TRANSLATED = _ZH / "translated.txt"
_SUMMARIES = _ZH / "summaries.tsv"
_UNTRANSLATED_NOTE = (
    '<div class="admonition note tformer-untranslated" lang="zh-CN"><p class="admonition-title">说明</p>'
    "<p>本章尚未译成中文，下面是英文原文；代码和输出与英文版相同。</p></div>"
)


def _lines(path: Path) -> list[str]:
    """The non-empty, non-comment lines of ``path``, stripped (none when it is missing)."""
    if not path.is_file():
        return []
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _chinese_page(app, pagename, templatename, context, doctree) -> None:
    """On a Chinese page: the note on a page not yet translated; the collapsed blocks' titles in Chinese."""
    if app.config.language != "zh_CN" or "body" not in context:
        return
    if pagename not in _lines(_TRANSLATED):
        if doctree is not None and pagename[:2].isdigit():
            context["body"] = f'{_UNTRANSLATED_NOTE}<div lang="en">{context["body"]}</div>'
        return
    # A <details> title is raw HTML, which gettext does not extract: summaries.tsv translates it.
    for row in _lines(_SUMMARIES)[1:]:
        english, chinese = row.split("\t")
        context["body"] = context["body"].replace(f"<summary>{english}</summary>", f"<summary>{chinese}</summary>")


def setup(app) -> None:
    app.connect("html-page-context", _chinese_page)
