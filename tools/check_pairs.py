"""Check that every notebook pair agrees and that the stored .ipynb is a finished run.

Usage: python tools/check_pairs.py [NOTEBOOK_DIR]   (default: notebooks)

For each percent-format ``NN_name.py`` (the source) it fails, naming the file, when:
- ``NN_name.ipynb`` is missing;
- the two disagree in cell types, sources or tags (someone edited one side only: run ``make sync``);
- the .ipynb has code cells but none stores an output (nbval would compare nothing);
- a code cell of the .ipynb was never run (``execution_count`` is null) although the notebook was executed;
- an output stores a traceback or an error.
Exit status 0 when all is well, 1 otherwise.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jupytext


def problems(py: Path) -> list[str]:
    """Return human-readable problems for the pair whose source is ``py`` (empty when the pair is fine)."""
    nb_path = py.with_suffix(".ipynb")
    if not nb_path.exists():
        return [f"{nb_path}: missing (run `make sync` to generate it from {py})"]
    # Tags count: they carry nbval's markers (nbval-ignore-output) and the book's (remove-cell).
    source_cells = [(c.cell_type, c.source.strip(), c.metadata.get("tags", [])) for c in jupytext.read(py).cells]
    stored_cells = [(c.cell_type, c.source.strip(), c.metadata.get("tags", [])) for c in jupytext.read(nb_path).cells]
    if source_cells != stored_cells:
        first = next(
            (i for i, (a, b) in enumerate(zip(source_cells, stored_cells, strict=False)) if a != b),
            min(len(source_cells), len(stored_cells)),
        )
        return [
            f"{py} and {nb_path} are out of sync (first difference at cell {first}; "
            f"{len(source_cells)} vs {len(stored_cells)} cells): edit the .py, then carry markdown-only changes over "
            f"with `tools/update_prose.py {py}` (outputs kept), or re-run the chapter with `make sync NB={py}`"
        ]
    found = []
    code = [c for c in json.loads(nb_path.read_text())["cells"] if c["cell_type"] == "code"]
    if code and not any(c.get("outputs") for c in code):
        found.append(f"{nb_path}: stored without outputs (nbval would compare nothing): run `make sync`")
    for index, cell in enumerate(code):
        if cell.get("execution_count") is None and code and any(c.get("outputs") for c in code):
            found.append(f"{nb_path}: code cell {index} was never run: run `make sync`")
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", "")) if isinstance(output.get("text"), list) else output.get("text", "")
            if output.get("output_type") == "error" or "Traceback (most recent call last)" in text:
                found.append(f"{nb_path}: code cell {index} stores a traceback")
    return found


def main(argv: list[str]) -> int:
    """Check every pair under the directory named in ``argv`` (default ``notebooks``)."""
    folder = Path(argv[1]) if len(argv) > 1 else Path("notebooks")
    sources = sorted(folder.glob("[0-9][0-9]_*.py"))
    if not sources:
        print(f"check_pairs: no NN_*.py notebook sources in {folder}")
        return 1
    found = [p for py in sources for p in problems(py)]
    for line in found:
        print(f"check_pairs: {line}")
    if not found:
        print(f"check_pairs: {len(sources)} notebook pairs in sync, all stored with outputs")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
