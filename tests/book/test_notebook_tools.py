"""The notebook tooling catches what breaks a textbook repo: drifted pairs, stale outputs, raising cells."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = """# %% [markdown]
# # 99 · A tiny chapter

# %%
print(6 * 7)
"""


def run_tool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch copy of the tools with one tiny notebook pair, synced (executed) once."""
    root = tmp_path_factory.mktemp("book")
    shutil.copytree(ROOT / "tools", root / "tools")
    shutil.copy(ROOT / "jupytext.toml", root / "jupytext.toml")
    (root / "notebooks").mkdir()
    (root / "notebooks" / "99_tiny.py").write_text(SOURCE)
    done = run_tool("tools/sync_notebooks.py", "notebooks/99_tiny.py", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


def test_synced_pair_passes_and_stores_outputs(synced: Path) -> None:
    done = run_tool("tools/check_pairs.py", "notebooks", cwd=synced)
    assert done.returncode == 0, done.stdout
    cells = json.loads((synced / "notebooks" / "99_tiny.ipynb").read_text())["cells"]
    assert cells[1]["outputs"][0]["text"] == ["42\n"]
    assert "execution" not in cells[1]["metadata"]  # no timing metadata: reruns give clean diffs


@pytest.mark.parametrize("edited", ["py", "ipynb"])
def test_editing_one_side_of_a_pair_is_named(synced: Path, tmp_path: Path, edited: str) -> None:
    copy = tmp_path / "book"
    shutil.copytree(synced, copy)
    target = copy / "notebooks" / f"99_tiny.{edited}"
    target.write_text(target.read_text().replace("6 * 7", "6 * 8"))
    done = run_tool("tools/check_pairs.py", "notebooks", cwd=copy)
    assert done.returncode == 1
    assert "notebooks/99_tiny.py and notebooks/99_tiny.ipynb are out of sync" in done.stdout


def test_a_stored_traceback_fails(synced: Path, tmp_path: Path) -> None:
    copy = tmp_path / "book"
    shutil.copytree(synced, copy)
    path = copy / "notebooks" / "99_tiny.ipynb"
    notebook = json.loads(path.read_text())
    notebook["cells"][1]["outputs"] = [
        {"output_type": "error", "ename": "ValueError", "evalue": "boom", "traceback": ["ValueError: boom"]}
    ]
    path.write_text(json.dumps(notebook))
    done = run_tool("tools/check_pairs.py", "notebooks", cwd=copy)
    assert done.returncode == 1
    assert "99_tiny.ipynb: code cell 0 stores a traceback" in done.stdout


def test_a_notebook_without_outputs_fails(synced: Path, tmp_path: Path) -> None:
    copy = tmp_path / "book"
    shutil.copytree(synced, copy)
    path = copy / "notebooks" / "99_tiny.ipynb"
    notebook = json.loads(path.read_text())
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    path.write_text(json.dumps(notebook))
    done = run_tool("tools/check_pairs.py", "notebooks", cwd=copy)
    assert done.returncode == 1
    assert "stored without outputs" in done.stdout


def test_sync_names_the_notebook_and_cell_that_raises(synced: Path, tmp_path: Path) -> None:
    copy = tmp_path / "book"
    shutil.copytree(synced, copy)
    source = copy / "notebooks" / "99_tiny.py"
    source.write_text(SOURCE + "\n# %%\nraise ValueError('broken on purpose')\n")
    before = (copy / "notebooks" / "99_tiny.ipynb").read_text()
    done = run_tool("tools/sync_notebooks.py", "notebooks/99_tiny.py", cwd=copy)
    assert done.returncode == 1
    assert "notebooks/99_tiny.py: cell 2 (`raise ValueError('broken on purpose')`) raised ValueError: broken on purpose" in done.stderr
    assert (copy / "notebooks" / "99_tiny.ipynb").read_text() == before


def test_colab_cells_are_generated_from_one_repository_setting(tmp_path: Path) -> None:
    (tmp_path / "notebooks").mkdir()
    shutil.copytree(ROOT / "tools", tmp_path / "tools")
    shutil.copy(ROOT / "jupytext.toml", tmp_path / "jupytext.toml")
    (tmp_path / "pyproject.toml").write_text('[tool.tformer]\nrepository = "someone/fork"\nbranch = "dev"\n')
    (tmp_path / "notebooks" / "99_tiny.py").write_text(SOURCE)
    assert run_tool("tools/notebook_cells.py", "--check", cwd=tmp_path).returncode == 1
    assert run_tool("tools/notebook_cells.py", cwd=tmp_path).returncode == 0
    text = (tmp_path / "notebooks" / "99_tiny.py").read_text()
    assert "colab.research.google.com/github/someone/fork/blob/dev/notebooks/99_tiny.ipynb" in text
    assert '"--branch", "dev",' in text and '"https://github.com/someone/fork", "/content/tformer"' in text
    assert run_tool("tools/notebook_cells.py", "--check", cwd=tmp_path).returncode == 0


def test_sync_twice_gives_identical_files(synced: Path, tmp_path: Path) -> None:
    copy = tmp_path / "book"
    shutil.copytree(synced, copy)
    before = (copy / "notebooks" / "99_tiny.ipynb").read_text()
    done = run_tool("tools/sync_notebooks.py", "notebooks/99_tiny.py", cwd=copy)
    assert done.returncode == 0, done.stderr
    assert (copy / "notebooks" / "99_tiny.ipynb").read_text() == before  # stable cell ids, no timings


def test_sync_stamps_the_manifest_with_the_outputs_it_stored(tmp_path: Path) -> None:
    from tformer.book.results import DIGEST_KEY, outputs_digest

    shutil.copytree(ROOT / "tools", tmp_path / "tools")
    shutil.copy(ROOT / "jupytext.toml", tmp_path / "jupytext.toml")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "99_tiny.py").write_text(
        "# %%\nfrom tformer.book.results import Results\n\nresults = Results('99_tiny')\n"
        "speedup = results.record('speedup', 8.77, tol=0.5)\nprint(f'{speedup:.2f}× faster')\n"
    )
    done = run_tool("tools/sync_notebooks.py", "notebooks/99_tiny.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "notebooks" / "results" / "99_tiny.json").read_text())
    notebook = json.loads((tmp_path / "notebooks" / "99_tiny.ipynb").read_text())
    assert manifest == {"speedup": {"value": 8.77, "tol": 0.5}, DIGEST_KEY: outputs_digest(notebook)}
    assert notebook["cells"][0]["outputs"][0]["text"] == ["8.77× faster\n"]


def test_the_setup_cell_opens_collapsed_and_the_check_wants_it(tmp_path: Path) -> None:
    """JupyterLab and Colab open a chapter on its title: the generated setup cell's code is collapsed."""
    import jupytext

    (tmp_path / "notebooks").mkdir()
    shutil.copytree(ROOT / "tools", tmp_path / "tools")
    shutil.copy(ROOT / "jupytext.toml", tmp_path / "jupytext.toml")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    py = tmp_path / "notebooks" / "99_tiny.py"
    py.write_text(SOURCE)
    assert run_tool("tools/notebook_cells.py", cwd=tmp_path).returncode == 0
    setup = jupytext.read(py).cells[1]
    assert setup.cell_type == "code" and "generated by `make colab`" in setup.source
    assert setup.metadata["jupyter"] == {"source_hidden": True}
    assert setup.metadata["cellView"] == "form" and setup.metadata["tags"] == ["remove-cell"]
    assert run_tool("tools/notebook_cells.py", "--check", cwd=tmp_path).returncode == 0
    # A setup cell from before (tags only, code showing) is stale for the check.
    assert '# %% cellView="form" jupyter={"source_hidden": true} tags=["remove-cell"]' in py.read_text()
    py.write_text(py.read_text().replace('cellView="form" jupyter={"source_hidden": true} ', ""))
    assert "source_hidden" not in py.read_text()
    done = run_tool("tools/notebook_cells.py", "--check", cwd=tmp_path)
    assert done.returncode == 1 and "99_tiny.py: Colab link / setup cell out of date" in done.stdout


def test_update_prose_keeps_outputs_on_a_markdown_change_and_refuses_a_code_change(
    synced: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "book"
    shutil.copytree(synced, copy)
    py, ipynb = copy / "notebooks" / "99_tiny.py", copy / "notebooks" / "99_tiny.ipynb"
    outputs = [c.get("outputs") for c in json.loads(ipynb.read_text())["cells"] if c["cell_type"] == "code"]
    assert outputs and any(outputs)

    py.write_text(py.read_text().replace("# # 99 · A tiny chapter", "# # 99 · A tiny chapter, retitled"))
    done = run_tool("tools/update_prose.py", "notebooks/99_tiny.py", cwd=copy)
    assert done.returncode == 0, done.stderr
    notebook = json.loads(ipynb.read_text())
    assert "".join(notebook["cells"][0]["source"]) == "# 99 · A tiny chapter, retitled"
    assert [c.get("outputs") for c in notebook["cells"] if c["cell_type"] == "code"] == outputs
    assert run_tool("tools/check_pairs.py", "notebooks", cwd=copy).returncode == 0

    before = ipynb.read_text()
    py.write_text(py.read_text().replace("print(6 * 7)", "print(6 * 8)"))
    done = run_tool("tools/update_prose.py", "notebooks/99_tiny.py", cwd=copy)
    assert done.returncode == 1
    assert "the code changed (code cell 0): run `make sync NB=notebooks/99_tiny.py`" in done.stderr
    assert ipynb.read_text() == before
