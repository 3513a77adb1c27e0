"""What the chapters show: every diagram a chapter displays exists and renders, every diagram is displayed
somewhere, and every ``show_source(...)`` in a chapter resolves to package code (issue 14: "the reader can
always see what ran").

The chapters are read as Python (their percent-format ``.py`` sources), not executed: the calls are found in
the syntax tree, and a ``show_source`` argument is evaluated against the chapter's own ``tformer`` imports.
"""

from __future__ import annotations

import ast
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tformer.book import diagrams
from tformer.book.source import source

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
NS = {"svg": "http://www.w3.org/2000/svg"}

# The models a chapter trains from the package, and the code it must show for them (qualified names).
MUST_SHOW = {
    "02_seq2seq_bottleneck": {"Seq2SeqRNN.encode", "Seq2SeqRNN.forward"},  # Bahdanau: a teaching version, tested equal
    "10_encoder_decoder": {"Transformer._encode", "Transformer._decode", "Transformer.forward"},
    "11_real_sentences": {"EncoderOnlyTransformer.encode"},  # masked-token pre-training moves to chapter 12
    "12_three_families": {"_TokenStack.forward", "EncoderOnlyTransformer.encode", "DecoderOnlyTransformer.forward",
                          "mask_tokens", "pretrain_mlm"},
    "17_small_gpt": {"train_poet", "continue_poem"},  # how it trains, and how it writes
}


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    """Calls to ``name(...)`` or ``something.name(...)``, in source order."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == name) or (isinstance(f, ast.Attribute) and f.attr == name):
                found.append(node)
    return sorted(found, key=lambda n: n.lineno)


def _tree(chapter: Path) -> ast.Module:
    return ast.parse(chapter.read_text(encoding="utf-8"), filename=chapter.name)


def _diagram_calls(chapter: Path) -> list[tuple[int, str]]:
    out = []
    text = chapter.read_text(encoding="utf-8")
    bare_show = "from tformer.book.diagrams import show\n" in text or "from tformer.book.diagrams import show," in text
    for call in _calls(_tree(chapter), "show"):
        f = call.func
        # diagrams.show("name"), or show("name") when imported from tformer.book.diagrams (09 has its own show)
        is_diagram = (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "diagrams") \
            or (isinstance(f, ast.Name) and bare_show)
        if not is_diagram:
            continue
        assert len(call.args) == 1 and isinstance(call.args[0], ast.Constant), \
            f"{chapter.name}:{call.lineno}: show() needs one literal name"
        out.append((call.lineno, call.args[0].value))
    return out


def _shown() -> dict[str, list[str]]:
    where: dict[str, list[str]] = {}
    for chapter in CHAPTERS:
        for _, name in _diagram_calls(chapter):
            where.setdefault(name, []).append(chapter.stem)
    return where


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_diagram_a_chapter_shows_exists_and_renders(chapter: Path) -> None:
    for line, name in _diagram_calls(chapter):
        assert name in diagrams.DIAGRAMS, f"{chapter.name}:{line}: show({name!r}) names no diagram"
        d = diagrams.diagram(name)
        root = ET.fromstring(d.svg)
        assert root.find("svg:title", NS).text == d.title and d.title.strip()
        assert root.find("svg:desc", NS).text == d.alt and len(d.alt.split()) >= 30
        assert len(root.findall(".//svg:rect", NS)) >= 3, f"{name}: renders an empty picture"
        assert 'alt="' in d._repr_html_() and "data:image/svg+xml;base64," in d._repr_html_()


def test_every_diagram_is_shown_in_a_chapter() -> None:
    where = _shown()
    missing = [name for name in diagrams.DIAGRAMS if name not in where]
    assert not missing, f"diagrams no chapter shows: {missing}"


def test_diagrams_sit_where_their_idea_is_taught() -> None:
    where = _shown()
    expected = {
        "unrolled_rnn": "01", "lstm_cell": "01", "gru_cell": "01", "seq2seq_bottleneck": "02",
        "seq2seq_attention": "02", "scan_score_mix": "03", "qkv_dictionary": "04", "masks": "06",
        "multi_head": "07", "transformer_block": "09", "kv_cache": "10", "three_families": "12", "gqa": "14",
        "two_storey": "10", "encoder_decoder_base": "10",
    }
    for name, chapter in expected.items():
        assert any(stem.startswith(chapter) for stem in where.get(name, [])), f"{name}: not shown in chapter {chapter}"


def _imports(tree: ast.Module) -> dict[str, object]:
    """The namespace the chapter's ``tformer`` imports create (wherever in the chapter they stand)."""
    namespace: dict[str, object] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tformer"):
            exec(compile(ast.Module(body=[node], type_ignores=[]), "<imports>", "exec"), namespace)
        elif isinstance(node, ast.Import) and any(a.name.startswith("tformer") for a in node.names):
            exec(compile(ast.Module(body=[node], type_ignores=[]), "<imports>", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_show_source_in_a_chapter_resolves(chapter: Path) -> None:
    tree = _tree(chapter)
    calls = _calls(tree, "show_source")
    shown = set()
    if calls:
        namespace = _imports(tree)
        assert "show_source" in namespace, f"{chapter.name}: show_source is not imported from tformer.book.source"
    for call in calls:
        where = f"{chapter.name}:{call.lineno}"
        assert len(call.args) == 1, f"{where}: show_source takes one object"
        expr = ast.unparse(call.args[0])
        try:
            obj = eval(expr, dict(namespace))
        except (NameError, AttributeError) as err:
            raise AssertionError(f"{where}: show_source({expr}) does not resolve: {err}") from err
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
        assert set(kwargs) <= {"docstrings"}, f"{where}: unexpected arguments {sorted(kwargs)}"
        shown_source = source(obj, **kwargs)
        assert shown_source.path.startswith("tformer/"), f"{where}: {expr} is not package code"
        assert shown_source.code.strip(), f"{where}: {expr} shows no code"
        ast.parse(shown_source.code)
        assert len(shown_source.code.splitlines()) <= 60, f"{where}: {expr} shows a page of code; show less"
        shown.add(expr)
    missing = MUST_SHOW.get(chapter.stem, set()) - shown
    assert not missing, f"{chapter.name}: trains a package model but does not show {sorted(missing)}"
