#!/usr/bin/env bash
# Colab guard: install tformer into a fresh virtual environment with the NEWEST releases that its declared
# ranges allow (pip's eager upgrade), not the pins of requirements.txt, and run the preface and chapter 05
# there. A new Colab runtime brings new numpy/matplotlib/pandas releases; this catches a first cell that
# would break on them.
#
# torch: PyPI's newest Linux wheels are CUDA builds of several GB. The newest CPU-only build this registry
# offers is the one requirements.txt pins (+cpu), so torch is installed from that and numpy, matplotlib,
# pandas, tqdm, sacrebleu and mplfonts float to their newest releases.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$(mktemp -d)/newest"
"${PYTHON:-python3}" -m venv "$venv"  # the Makefile passes its PYTHON (make check-newest PYTHON=python3.11)
pip_install() { "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@"; }
torch_pin=$(grep -E '^torch==' requirements.txt)
# A constraint keeps the eager upgrade below from swapping the CPU build for a multi-GB CUDA build.
echo "${torch_pin}+cpu" > "$venv/torch-constraint.txt"
pip_install -c "$venv/torch-constraint.txt" torch
pip_install -c "$venv/torch-constraint.txt" --upgrade --upgrade-strategy eager . nbval ipykernel jupytext pytest
"$venv/bin/python" - <<'PY'
import importlib.metadata as m
print("newest-env:", ", ".join(f"{p} {m.version(p)}" for p in ["torch", "numpy", "matplotlib", "pandas", "tqdm", "sacrebleu"]))
assert m.version("torch").endswith("+cpu"), "the eager upgrade replaced the CPU build of torch"
PY
# Lax mode: every cell runs and every in-cell assertion must hold; outputs are not compared digit by digit,
# since newer releases may print a value in a different format.
(cd notebooks && "$venv/bin/python" -m pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env \
    --nbval-cell-timeout 600 00_preface.ipynb $(ls 05_*.ipynb 2>/dev/null))
rm -rf "$(dirname "$venv")"
