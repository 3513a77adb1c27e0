"""pytest plugin: run the slowest notebooks first, and print how long each took under nbval.

Loaded with ``-p tools.notebook_times``.

- **Order.** With ``pytest -n 2 --dist loadfile --no-loadscope-reorder`` each worker takes the next whole
  notebook from the queue when it runs low, so the queue's order decides how the two workers' loads end up.
  Slowest first (the longest-processing-time rule) keeps one long chapter from starting last while the other
  worker sits idle. The order comes from ``EXPECTED_S`` (seconds per notebook in the one-thread, two-worker
  pass of a CI run); a notebook not listed counts as 10 s. The cells of a notebook keep their order.
- **Times.** Sums the setup, call and teardown time of every cell item per notebook (with pytest-xdist the
  controller receives each worker's reports) and prints a table, slowest first, before pytest's closing line.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

# seconds per notebook, one thread, two workers (a run of 2026-12-06 on a faster machine than before; chapter 17
# trains for 150 CPU seconds, so it stays the slowest wherever it runs); only the order matters
EXPECTED_S = {
    "17_small_gpt": 171, "12_three_families": 147, "10_encoder_decoder": 74, "09_transformer_block": 73,
    "02_seq2seq_bottleneck": 60, "08_positional_encoding": 53, "14_new_problems": 52, "15_parallelism": 41,
    "01_rnn_baselines": 40, "07_multi_head_attention": 33, "11_real_sentences": 22, "13_complexity": 17,
}  # fmt: skip
UNLISTED_S = 10

_seconds: dict[str, float] = defaultdict(float)


def _stem(nodeid: str) -> str:
    return nodeid.split("::")[0].rsplit("/", 1)[-1].removesuffix(".ipynb")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the notebooks' cells in order of the notebooks' expected time, slowest first (a stable sort)."""
    if any(item.nodeid.split("::")[0].endswith(".ipynb") for item in items):
        items.sort(key=lambda item: -EXPECTED_S.get(_stem(item.nodeid), UNLISTED_S)
                   if item.nodeid.split("::")[0].endswith(".ipynb") else 0)  # fmt: skip


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add this report's duration to its notebook's total."""
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _seconds[path] += report.duration


def pytest_terminal_summary(terminalreporter) -> None:
    """Print the per-notebook time table (seconds, wall time inside the kernel, slowest first)."""
    if not _seconds:
        return
    terminalreporter.section("time per notebook (s)")
    for path, seconds in sorted(_seconds.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"{seconds:8.1f}  {path}")
    terminalreporter.write_line(f"{sum(_seconds.values()):8.1f}  total")
