"""``tformer.book.source``: the package's own code, displayed highlighted, text preserved, deterministic."""

from __future__ import annotations

import ast
import html
import importlib.metadata
import inspect
import re
import textwrap
from pathlib import Path

import pytest

import tformer.masks
from tformer import MultiHeadAttention, Seq2SeqRNN
from tformer.book.source import show_source, source
from tformer.functional import scaled_dot_product_attention

ROOT = Path(__file__).resolve().parents[2]


def _text_of(markup: str) -> str:
    """The characters a reader sees in the highlighted block (tags dropped, entities decoded)."""
    pre = re.search(r"<pre[^>]*>(.*)</pre>", markup, re.DOTALL)
    assert pre is not None
    return html.unescape(re.sub(r"<[^>]+>", "", pre.group(1)))


@pytest.mark.parametrize(
    ("obj", "qualname", "path"),
    [
        (scaled_dot_product_attention, "tformer.functional.scaled_dot_product_attention", "tformer/functional.py"),
        (Seq2SeqRNN, "tformer.baselines.seq2seq_rnn.Seq2SeqRNN", "tformer/baselines/seq2seq_rnn.py"),
        (MultiHeadAttention.forward, "tformer.attention.MultiHeadAttention.forward", "tformer/attention.py"),
        (tformer.masks, "tformer.masks", "tformer/masks.py"),
    ],
)
def test_source_is_the_objects_own_code_named_by_a_relative_path(obj, qualname: str, path: str) -> None:
    shown = source(obj)
    assert shown.qualname == qualname
    assert shown.path == path
    assert shown.code == textwrap.dedent(inspect.getsource(obj)).rstrip("\n") + "\n"
    ast.parse(shown.code)  # a method is dedented into code that parses on its own
    assert repr(shown) == f"# {qualname} from {path}\n{shown.code.rstrip()}"


@pytest.mark.parametrize("obj", [scaled_dot_product_attention, Seq2SeqRNN, MultiHeadAttention.forward])
def test_html_is_highlighted_with_inline_styles_and_keeps_every_character(obj) -> None:
    shown = source(obj)
    markup = shown._repr_html_()
    assert _text_of(markup).rstrip("\n") == shown.code.rstrip("\n")
    assert markup.count('style="color:') > 20, "no syntax highlighting"
    # Inline styles only: JupyterLab drops <style> blocks from untrusted notebooks, so no class may carry colour.
    assert "<style" not in markup
    assert set(re.findall(r'class="([^"]*)"', markup)) <= {"tformer-source", "highlight"}
    assert markup == source(obj)._repr_html_(), "output differs between two calls"
    assert str(ROOT) not in markup


def test_docstrings_false_drops_only_the_docstrings() -> None:
    full, bare = source(Seq2SeqRNN), source(Seq2SeqRNN, docstrings=False)
    tree = ast.parse(bare.code)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            assert ast.get_docstring(node) is None, f"{node.name} kept its docstring"
    assert len(bare.code) < len(full.code)
    # Every line that is not part of a docstring survives, in order.
    full_tree = ast.parse(full.code)
    doc_lines = {
        i
        for node in ast.walk(full_tree)
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and ast.get_docstring(node) is not None
        for i in range(node.body[0].lineno, node.body[0].end_lineno + 1)
    }
    kept = [line for i, line in enumerate(full.code.splitlines(), start=1) if i not in doc_lines]
    assert bare.code.splitlines() == kept


@pytest.mark.parametrize("obj", [len, 3, "text"])
def test_objects_without_python_source_are_rejected(obj) -> None:
    with pytest.raises(TypeError, match="obj: expected a class, function, method or module with Python source, got"):
        source(obj)


def test_show_source_displays_html_and_plain_code() -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    try:
        with capture_output() as captured:
            assert show_source(scaled_dot_product_attention, docstrings=False) is None
    finally:
        InteractiveShell.clear_instance()
    (output,) = captured.outputs
    expected = source(scaled_dot_product_attention, docstrings=False)
    assert output.data["text/html"] == expected._repr_html_()
    assert output.data["text/plain"] == repr(expected)


def test_pygments_is_pinned_to_the_installed_version() -> None:
    """Highlighted HTML is stored in notebooks and compared by nbval: the highlighter's version must not float."""
    pins = dict(
        line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines() if "==" in line
    )
    assert pins.get("pygments") == importlib.metadata.version("pygments")
