"""pytest plugin: print how long each notebook took under nbval, so slow chapters show in CI logs.

Loaded with ``-p tools.notebook_times``. Sums the setup, call and teardown time of every cell item per
notebook (with pytest-xdist the controller receives each worker's reports) and prints a table, slowest
first, before pytest's closing line.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

_seconds: dict[str, float] = defaultdict(float)


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
