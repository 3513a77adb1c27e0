"""Sphinx configuration for the offline HTML book (used by ``tools/build_book.py``; not meant for ``sphinx-build`` alone).

The builder stages this file with the chapter notebooks, an ``index.md`` contents page and a local copy of MathJax 3
(from the ``django-static-mathjax`` wheel), then runs Sphinx. Notebooks are never executed: their stored outputs,
already checked by nbval, are rendered as they are. Nothing in the built site refers to a network address except
plain ``<a href>`` links (the "Open in Colab" badge's target, the papers cited in the prose).
"""

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

exclude_patterns = ["_build", "**.ipynb_checkpoints", "_mathjax"]
# A chapter may jump from "#" to "###"; that is a style choice, not a broken page.
suppress_warnings = ["myst.header"]
