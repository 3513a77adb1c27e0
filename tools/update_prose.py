"""Carry prose-only edits from a chapter's percent-format source into its stored notebook, without running it.

Usage: python tools/update_prose.py notebooks/NN_name.py [...]

A ``make sync`` re-executes the chapter, which moves every trained and timed number. When an edit touches only
markdown cells (or the metadata of a code cell, such as a hidden setup cell), that is not needed: this tool
rebuilds the ``.ipynb`` from the ``.py`` and gives each code cell the outputs stored for the same code. It
refuses (exit status 1, nothing written) when the code cells differ in number or source from the stored ones,
since their outputs would then not be the code's: run ``make sync NB=...`` instead. The stored outputs, and so
the results manifest's digest, are unchanged by construction.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jupytext
from jupytext.config import load_jupytext_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sync_notebooks import KERNELSPEC, stable_cell_ids

from tformer.book.results import outputs_digest


def update(py: Path) -> bool:
    """Rewrite ``py.with_suffix('.ipynb')`` with ``py``'s cells and the stored outputs; True on success."""
    ipynb = py.with_suffix(".ipynb")
    if py.suffix != ".py" or not py.exists() or not ipynb.exists():
        print(f"update_prose: {py}: expected a percent-format .py with its .ipynb beside it", file=sys.stderr)
        return False
    new = jupytext.read(py)
    stored = jupytext.read(ipynb)
    new_code = [c for c in new.cells if c.cell_type == "code"]
    old_code = [c for c in stored.cells if c.cell_type == "code"]
    changed = [i for i, (a, b) in enumerate(zip(new_code, old_code, strict=False)) if a.source != b.source]
    if len(new_code) != len(old_code) or changed:
        where = f"code cell {changed[0]}" if changed else f"{len(new_code)} code cells, {len(old_code)} stored"
        print(f"update_prose: {py}: the code changed ({where}): run `make sync NB={py}`", file=sys.stderr)
        return False
    before = outputs_digest(json.loads(ipynb.read_text(encoding="utf-8")))
    for cell, old in zip(new_code, old_code, strict=True):
        cell.outputs = old.outputs
        cell.execution_count = old.execution_count
    new.metadata["kernelspec"] = KERNELSPEC
    if "language_info" in stored.metadata:  # written by the kernel at the last execution; keep it
        new.metadata["language_info"] = stored.metadata["language_info"]
    stable_cell_ids(new.cells)
    jupytext.write(new, ipynb, config=load_jupytext_config(str(py.parent)))
    after = outputs_digest(json.loads(ipynb.read_text(encoding="utf-8")))
    assert before == after, f"{ipynb}: stored outputs changed"  # internal invariant: outputs are copied as is
    print(f"update_prose: {ipynb} updated (outputs kept)")
    return True


def main(argv: list[str]) -> int:
    """Update every notebook named in ``argv``; exit status 1 at the first one that needs a sync."""
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 1
    return 0 if all(update(Path(a)) for a in argv[1:]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
