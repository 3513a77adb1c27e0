"""The code on the page: ``show_source(obj)`` displays a package object's own source, highlighted.

A chapter that trains a model the reader has not built in its cells shows the code that ran with one line,
``show_source(Seq2SeqRNN)``, instead of a copy that could drift. The highlighted HTML uses inline styles only
(Pygments' ``noclasses``), so it looks the same in JupyterLab (whose sanitizer drops ``<style>`` blocks in an
untrusted notebook but keeps inline colours), in the HTML book and on Colab; the plain-text fallback is the code
itself. The output is a pure function of the source file, so nbval flags a stored chapter whose displayed code no
longer matches the package (``make sync`` refreshes it). The header names the file relative to the repository
(``tformer/models.py``), never an absolute path, and carries no line numbers, so an edit elsewhere in the file
does not change the output.
"""

from __future__ import annotations

import ast
import html
import inspect
import textwrap
from dataclasses import dataclass
from pathlib import Path

from tformer._checks import check_flags

__all__ = ["Source", "show_source", "source"]

PYGMENTS_STYLE = "default"
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds tformer/


@dataclass(frozen=True)
class Source:
    """The source of one object: its qualified name, the file it lives in (relative) and the code.

    Displays itself as highlighted HTML (``_repr_html_``) and as plain code (``__repr__``).
    """

    qualname: str
    path: str
    code: str

    def _repr_html_(self) -> str:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer

        formatter = HtmlFormatter(style=PYGMENTS_STYLE, noclasses=True, nobackground=False)
        body = highlight(self.code, PythonLexer(), formatter)
        header = (
            f'<div style="font-family: sans-serif; font-size: 0.85em; color: #555555; margin-bottom: 2px">'
            f"<code>{html.escape(self.qualname)}</code> from <code>{html.escape(self.path)}</code></div>"
        )
        return f'<div class="tformer-source">{header}{body}</div>'

    def __repr__(self) -> str:
        return f"# {self.qualname} from {self.path}\n{self.code.rstrip()}"


def _relative(path: str) -> str:
    p = Path(path).resolve()
    try:
        return p.relative_to(_PACKAGE_ROOT).as_posix()
    except ValueError:  # installed elsewhere (site-packages): name it from the package down
        parts = p.parts
        return "/".join(parts[parts.index("tformer") :]) if "tformer" in parts else p.name


def _drop_docstrings(code: str) -> str:
    """Remove the docstrings of the module, classes and functions in ``code``; keep everything else as written."""
    tree = ast.parse(code)
    drop: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                drop.update(range(first.lineno, first.end_lineno + 1))
    lines = code.splitlines()
    return "\n".join(line for i, line in enumerate(lines, start=1) if i not in drop) + "\n"


def source(obj: object, *, docstrings: bool = True) -> Source:
    """Return the source of a class, function, method or module as a displayable :class:`Source`.

    Args:
        obj: the object whose code to show, e.g. ``tformer.Transformer`` or ``tformer.functional``.
        docstrings: keep the docstrings (default); ``False`` shows only the code, which reads shorter.

    Raises:
        TypeError: if ``obj`` has no Python source (a builtin, an instance, a C extension).
    """
    check_flags(docstrings=docstrings)
    target = obj.fget if isinstance(obj, property) else obj
    try:
        code = inspect.getsource(target)
        path = inspect.getsourcefile(target)
    except (TypeError, OSError) as err:
        raise TypeError(
            f"obj: expected a class, function, method or module with Python source, got {type(obj).__name__}"
        ) from err
    code = textwrap.dedent(code)
    if not docstrings:
        code = _drop_docstrings(code)
    name = getattr(target, "__qualname__", None) or target.__name__
    module = getattr(target, "__module__", None)
    qualname = name if inspect.ismodule(target) or not module else f"{module}.{name}"
    return Source(qualname=qualname, path=_relative(path or "?"), code=code.rstrip("\n") + "\n")


def show_source(obj: object, *, docstrings: bool = True) -> None:
    """Display ``obj``'s own source in the notebook, highlighted (see :func:`source`).

    Raises:
        TypeError: if ``obj`` has no Python source.
    """
    from IPython.display import display

    display(source(obj, docstrings=docstrings))
