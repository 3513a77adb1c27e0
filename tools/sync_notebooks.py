"""Regenerate each .ipynb from its percent-format .py source and execute it, storing outputs.

Usage: python tools/sync_notebooks.py [notebooks/NN_name.py ...]   (default: every notebooks/NN_*.py)

The .py is the source of truth: its cells replace the notebook's, the notebook is executed top to bottom in
its own folder with the current interpreter, and outputs are stored without timing metadata (so a rerun gives
a clean git diff). A cell that raises stops the run: the notebook and the cell are named, and the .ipynb is
left as it was. The chapter's results manifest (``results/NN_name.json``) is rebuilt by the same run, and the
digest of the outputs just stored is stamped into it (``tformer.book.results.outputs_digest``): the manifest
and the stored outputs are then provably one execution's. Exit status 0 on success, 1 on the first failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import jupytext
from jupytext.config import load_jupytext_config
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

from tformer.book.results import DIGEST_KEY, WRITE_ENV, outputs_digest

CELL_TIMEOUT_S = 900
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def stable_cell_ids(cells: list) -> None:
    """Give each cell an id derived from its type and source, so editing one cell changes one id in git.

    jupytext draws random ids on every read; these repeat from run to run. A repeated source (two identical
    ``plt.show()`` cells) is told apart by how many identical cells came before it.
    """
    seen: Counter[str] = Counter()
    for cell in cells:
        key = f"{cell.cell_type}:{cell.source}"
        cell.id = hashlib.sha256(f"{key}:{seen[key]}".encode()).hexdigest()[:16]
        seen[key] += 1


def stamp_manifest(manifest: Path, digest: str) -> None:
    """Write ``digest`` (of the stored outputs) into ``manifest`` under ``DIGEST_KEY``, keeping its layout."""
    entries = json.loads(manifest.read_text(encoding="utf-8"))
    entries[DIGEST_KEY] = digest
    manifest.write_text(json.dumps(entries, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def drop_live_outputs(notebook) -> None:
    """Forget what only a live kernel can show: widget state, and the outputs of cells tagged ``remove-output``
    (controls such as chapter 10's text box, whose stored copy could not be used and would change every run)."""
    notebook.metadata.pop("widgets", None)
    for cell in notebook.cells:
        if cell.cell_type == "code" and "remove-output" in cell.metadata.get("tags", []):
            cell.outputs = []


def sync(py: Path) -> bool:
    """Execute the notebook generated from ``py`` and write ``py.with_suffix('.ipynb')``; True on success."""
    notebook = jupytext.read(py)
    notebook.metadata["kernelspec"] = KERNELSPEC
    stable_cell_ids(notebook.cells)
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(py.parent)}},
        record_timing=False,
    )
    # The chapter's results manifest is rebuilt from scratch, so keys the notebook no longer records vanish.
    manifest = py.parent / "results" / f"{py.stem}.json"
    previous = manifest.read_text() if manifest.exists() else None
    manifest.unlink(missing_ok=True)
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as error:
        if previous is not None:
            manifest.write_text(previous)
        failed = next(
            (i for i, c in enumerate(notebook.cells)
             if c.cell_type == "code" and any(o.get("output_type") == "error" for o in c.get("outputs", []))),
            None,
        )
        where = "an unknown cell"
        if failed is not None:
            first_line = notebook.cells[failed].source.strip().splitlines()[0] if notebook.cells[failed].source.strip() else ""
            where = f"cell {failed} (`{first_line[:60]}`)"
        print(f"sync: {py}: {where} raised {error.ename}: {error.evalue}", file=sys.stderr)
        print(f"sync: {py.with_suffix('.ipynb')} left unchanged", file=sys.stderr)
        return False
    except CellTimeoutError as error:  # a cell over CELL_TIMEOUT_S: the manifest is restored here too
        if previous is not None:
            manifest.write_text(previous)
        print(f"sync: {py}: {error}", file=sys.stderr)
        print(f"sync: {py.with_suffix('.ipynb')} left unchanged", file=sys.stderr)
        return False
    drop_live_outputs(notebook)
    ipynb = py.with_suffix(".ipynb")
    jupytext.write(notebook, ipynb, config=load_jupytext_config(str(py.parent)))
    if manifest.exists():
        stamp_manifest(manifest, outputs_digest(json.loads(ipynb.read_text(encoding="utf-8"))))
    print(f"sync: {py.with_suffix('.ipynb')} executed in {time.perf_counter() - start:.1f} s")
    return True


def main(argv: list[str]) -> int:
    """Sync the notebooks named in ``argv`` (or all of them)."""
    # The kernel inherits this: only a sync writes the results manifests (tformer.book.results).
    os.environ[WRITE_ENV] = "1"
    sources = [Path(a) for a in argv[1:]] or sorted(Path("notebooks").glob("[0-9][0-9]_*.py"))
    for py in sources:
        if py.suffix != ".py" or not py.exists():
            print(f"sync: {py}: expected an existing percent-format .py notebook source", file=sys.stderr)
            return 1
        if not sync(py):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
