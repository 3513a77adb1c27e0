"""No module of the package imports another module's private name (issue 27).

Walks every module's ``import`` statements (the source, not the runtime): ``from tformer.x import _name`` is
refused, whatever ``tformer.x`` is. A private name is a module's own business; what two modules share is public
(``tformer._checks`` is a private *module* whose functions are public). Also: the library never imports the
book (``tformer.book`` is for the notebooks), and the RNN baselines import nothing from Transformer decoding.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tformer

PACKAGE = Path(tformer.__file__).parent
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "book" not in p.relative_to(PACKAGE).parts)


def _imports(path: Path) -> list[tuple[str, str]]:
    """``(module, name)`` for every ``from module import name`` in ``path``, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inside = path.is_relative_to(PACKAGE)
    package = ".".join(("tformer", *path.relative_to(PACKAGE).with_suffix("").parts[:-1])) if inside else "tformer"
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            found.extend((module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name, "") for alias in node.names)
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_name_is_imported_across_modules(path: Path) -> None:
    private = [f"{m}.{n}" for m, n in _imports(path) if m.startswith("tformer") and n.startswith("_")]
    assert not private, f"{path.name} imports private names {private}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_library_does_not_import_the_book(path: Path) -> None:
    book = [m for m, _ in _imports(path) if m == "tformer.book" or m.startswith("tformer.book.")]
    assert not book, f"{path.name} imports {book}"


def test_the_rnn_baselines_import_nothing_from_transformer_decoding() -> None:
    for path in (PACKAGE / "baselines").glob("*.py"):
        assert all(m != "tformer.decoding" for m, _ in _imports(path)), path.name


def test_the_private_name_test_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from tformer.attention import _same_view\n", encoding="utf-8")
    assert [n for m, n in _imports(bad) if n.startswith("_")] == ["_same_view"]
