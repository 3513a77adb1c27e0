"""Stored outputs that nbval compares must repeat on any CPU and thread count (issue: reproducible outputs).

Two kinds of output broke that on another machine: rounding noise printed as a value (``max |a − b| = 3.1e-15``,
whose digits change with the CPU) and the float a ``results.record`` call returns, left as a cell's last value
(Jupyter shows all 17 digits). A checked cell (not marked ``NBVAL_IGNORE_OUTPUT``) may print neither: print a
bound with :func:`tformer.book.results.below`, and assign the record's return value.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

# A number in scientific notation, e.g. 3.1e-15 or 2.7e-07.
SCIENTIFIC = re.compile(r"\d(?:\.\d+)?e[-+]\d+")
# A float64 rounding-level value: 1e-13 or smaller, printed in scientific notation.
FLOAT64_NOISE = re.compile(r"\d(?:\.\d+)?e-(?:1[3-9]|[2-9]\d)")


def _ignored(cell: dict) -> bool:
    tags = cell.get("metadata", {}).get("tags", [])
    return "NBVAL_IGNORE_OUTPUT" in "".join(cell["source"]) or "nbval-ignore-output" in tags or "nbval-skip" in tags


def _text(output: dict) -> str:
    return "".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))


def _is_bound(line: str, start: int) -> bool:
    """True if the number at ``start`` is a stated bound or tolerance ("< 1e-12", "atol 1e-14", "to 1e-12")."""
    before = line[:start].rstrip()
    return before.endswith(("<", "≤", "tol", "to", "rtol", "atol", "within"))


def _ends_with_bare_record(source: str) -> bool:
    """True if the cell's last statement is an expression whose value is a ``….record(...)`` call."""
    try:
        body = ast.parse(source).body
    except SyntaxError:  # IPython magics: not our concern here
        return False
    last = body[-1] if body else None
    return (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and isinstance(last.value.func, ast.Attribute)
        and last.value.func.attr == "record"
    )


def machine_dependent_outputs(notebook: Path) -> list[str]:
    """One message per checked cell of ``notebook`` whose stored output would change with the CPU."""
    found = []
    code = [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
    for index, cell in enumerate(code):
        if _ignored(cell):
            continue
        where = f"{notebook.name} code cell {index}"
        if _ends_with_bare_record("".join(cell["source"])):
            found.append(f"{where}: ends with a bare results.record(...), whose full float is stored as output")
        for output in cell.get("outputs", []):
            for line in _text(output).splitlines():
                values = [m for m in SCIENTIFIC.finditer(line) if not _is_bound(line, m.start())]
                if any(FLOAT64_NOISE.fullmatch(m.group()) for m in values):
                    found.append(f"{where}: prints float64 rounding noise: {line.strip()!r}")
                elif "max |" in line and values:
                    found.append(f"{where}: prints a difference's digits instead of a bound: {line.strip()!r}")
    return found


@pytest.mark.parametrize("notebook", sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.stem)
def test_checked_outputs_do_not_depend_on_the_machine(notebook: Path) -> None:
    assert machine_dependent_outputs(notebook) == []


def _tiny(tmp_path: Path, source: str, text: str, tags: list[str] | None = None) -> Path:
    cell = {"cell_type": "code", "source": source, "metadata": {"tags": tags or []}, "execution_count": 1,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": text}]}
    path = tmp_path / "99_tiny.ipynb"
    path.write_text(json.dumps({"cells": [cell]}))
    return path


def test_each_kind_of_noise_is_caught_and_a_bound_passes(tmp_path: Path) -> None:
    noisy = _tiny(tmp_path, "print(d)", "max |ours - torch| = 3.1e-15\n")
    assert len(machine_dependent_outputs(noisy)) == 1
    float32 = _tiny(tmp_path, "print(d)", "max |fused − ours| = 2.7e-07\n")
    assert "instead of a bound" in machine_dependent_outputs(float32)[0]
    bare = _tiny(tmp_path, "x = 1\nresults.record('k', x)", "")
    assert "bare results.record" in machine_dependent_outputs(bare)[0]
    assert machine_dependent_outputs(_tiny(tmp_path, "print(d)", "max |ours - torch| < 1e-12\n")) == []
    assert machine_dependent_outputs(_tiny(tmp_path, "_ = results.record('k', 1)", "")) == []
    ignored = _tiny(tmp_path, "print(d)", "max |a - b| = 3.1e-15\n", tags=["nbval-ignore-output"])
    assert machine_dependent_outputs(ignored) == []
