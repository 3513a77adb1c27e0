# tformer: the commands a reader needs are `make install`, `make lab` and `make test`; `make help` lists the rest.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.tformer-installed
PORT ?= 8888
NB ?= $(wildcard notebooks/[0-9][0-9]_*.py)
NBVAL := --nbval --nbval-current-env --nbval-cell-timeout 900 --nbval-kernel-startup-timeout 300 --nbval-sanitize-with tests/nbval_sanitize.cfg
# Two notebooks run at once on two cores: one torch thread per kernel avoids oversubscription (which slowed
# small models ~10x), and `make sync` uses the same setting so stored outputs come from the same arithmetic.
ONE_THREAD := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
# `make test` runs every chapter twice: first serially with torch's default thread count, as a reader's
# `pytest --nbval` on a laptop would (two kernels at default threads would oversubscribe two cores), then with
# one thread per kernel, two at a time. A stored output must not depend on the thread count.
# Running as root (containers, CI) needs --allow-root; a normal user does not.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: help install lab test test-unit test-notebooks test-notebooks-threads check-notebooks prose html pdf screenshots check-newest sync colab lint po clean

## make help: list the make targets, with what each does.
help:
	@sed -n 's/^## make //p; s/^## /    /p' $(MAKEFILE_LIST)

## make install: create .venv and install the pinned requirements and tformer (every other target but help,
## clean and check-newest does this on first use).
install: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -c 'import sys; v = sys.version_info[:2]; v == (3, 11) or print(f"make: warning: .venv has Python {v[0]}.{v[1]}; the stored outputs were made with 3.11 and chapter 12 may differ (rm -rf .venv; make lab PYTHON=python3.11)")'
	@echo "make: installing the pinned requirements and tformer into $(VENV) (a few quiet minutes the first time)"
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name tformer --display-name "Python (tformer)" >/dev/null
	@touch $(STAMP)

# The file browser lists each chapter once: the percent-format twins (NN_name.py) are hidden, next to the
# server's own default patterns. They are still saved: jupytext (jupytext.toml) writes both files on every save.
LAB_HIDE := __pycache__ *.pyc *.pyo .DS_Store *~ [0-9][0-9]_*.py
LAB_FLAGS := --notebook-dir=notebooks --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) $(ROOT_FLAG) \
	$(foreach glob,$(LAB_HIDE),'--ContentsManager.hide_globs=$(glob)')

## make lab: install everything (first time), then open JupyterLab on notebooks/ and print its URL.
lab: $(STAMP)
	$(BIN)/jupyter lab $(LAB_FLAGS)

## make test: pairing and prose checks, unit tests, nbval (strict) on every notebook at torch's default thread
## count, then again with one thread (the last pytest call: CI reads its closing line); fails if the run changed
## any file in the checkout (the tests never rewrite tracked files).
test: $(STAMP)
	@before=$$($(BIN)/python tools/tree_state.py) && \
	$(MAKE) --no-print-directory check-notebooks test-unit test-notebooks-threads test-notebooks && \
	after=$$($(BIN)/python tools/tree_state.py) && \
	if [ "$$before" != "$$after" ]; then echo "make test changed files in the checkout:"; git status --short; exit 1; fi

## make check-notebooks: every .py/.ipynb pair in sync with stored outputs, the generated first two cells, and the
## prose check.
check-notebooks: $(STAMP)
	$(BIN)/python tools/check_pairs.py notebooks
	$(BIN)/python tools/notebook_cells.py --check
	$(MAKE) --no-print-directory prose

## make prose: the prose check (tools/prose_check.py) on every chapter not listed in pyproject.toml's prose_pending.
prose: $(STAMP)
	$(BIN)/python tools/prose_check.py --enforced

## make test-unit: the unit, exercise and book tests (tests/), two workers; no notebook is executed.
test-unit: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 tests

## make test-notebooks [NB=notebooks/05_hand_calculation.py]: nbval on every stored notebook, or on NB's only; two at a
## time, one thread each, the slowest first (tools/notebook_times.py).
test-notebooks: $(STAMP)
	$(ONE_THREAD) $(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder $(NBVAL) -p tools.notebook_times $(NB:.py=.ipynb)

## make test-notebooks-threads [NB=...]: nbval on every notebook (or NB's), one at a time, with torch's default
## thread count (a reader's laptop; each cell may take up to 900 s).
test-notebooks-threads: $(STAMP)
	$(BIN)/python -m pytest -q -n 1 --dist loadfile $(NBVAL) -p tools.notebook_times $(NB:.py=.ipynb)

## make html: export the stored notebooks (no execution) to an offline HTML book in build/html/, and its Chinese
## edition in build/html/zh_CN/ (prose from locale/zh_CN/; code and outputs shared).
html: $(STAMP)
	$(BIN)/python tools/build_book.py

## make po [PAGES="07_multi_head_attention"]: re-extract the English prose and refresh the Chinese catalogues in
## locale/zh_CN/LC_MESSAGES/ of the translated pages (and of PAGES): new strings empty, changed ones fuzzy.
po: $(STAMP)
	$(BIN)/python tools/catalogue.py update $(PAGES)

## make pdf: the HTML book printed to one PDF, build/tformer.pdf (needs chromium, chromium-browser, google-chrome
## or google-chrome-stable on PATH).
pdf: html
	$(BIN)/python tools/build_pdf.py

## make screenshots: rebuild the book and refresh docs/*.png: the README's pages (the contents, chapter 05 in English
## and in Chinese), four diagrams as the HTML book and JupyterLab show them, and the controls of chapters 17 and 10
## running in JupyterLab (needs Chromium or Chrome on PATH, as make pdf).
screenshots: html
	TFORMER_SCREENSHOTS=1 $(BIN)/python -m pytest -q tests/book/test_html_book.py
	$(BIN)/python tools/diagram_screenshots.py
	$(BIN)/python tools/controls_screenshot.py

## make check-newest: the Colab guard; preface and chapter 05 in a fresh venv with the newest allowed releases.
check-newest:
	PYTHON=$(PYTHON) bash tools/newest_env_check.sh

## make sync [NB=notebooks/05_hand_calculation.py]: regenerate .ipynb from .py and re-execute with outputs.
sync: $(STAMP)
	$(BIN)/python tools/notebook_cells.py $(NB)
	$(ONE_THREAD) $(BIN)/python tools/sync_notebooks.py $(NB)

## make colab: write every notebook's first two cells, the Colab link and the setup cell (tools/notebook_cells.py).
colab: $(STAMP)
	$(BIN)/python tools/notebook_cells.py

## make lint: ruff on the package, tests, tools, benchmarks and the chapters' .py files.
lint: $(STAMP)
	$(BIN)/ruff check tformer tests tools benchmarks notebooks/*.py

## make clean: remove build/ and .pytest_cache (the .venv stays).
clean:
	rm -rf build .pytest_cache
