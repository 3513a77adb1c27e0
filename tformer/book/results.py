"""The results manifest: numbers a chapter's prose quotes, recorded by the code that computes them.

A notebook creates ``Results("05_hand_calculation")`` and calls ``record(key, value)`` for every number its
text states. The values land in ``results/<chapter>.json`` beside the notebook (written when the notebook runs,
committed by ``make sync``). In the prose, a quoted number carries an invisible marker right after it::

    the output is **0.8507**<!-- result: output_0 -->

``tests/book/test_results_manifest.py`` reads every marker and fails when the prose number and the recorded one
disagree by more than the tolerance: the one given to ``record`` (for numbers that depend on float rounding
order, such as trained accuracies), else half a unit in the last digit the prose prints.

The file is written only when the environment variable ``TFORMER_WRITE_RESULTS`` is ``1``, which
``tools/sync_notebooks.py`` (``make sync``) sets: re-running a notebook anywhere else (nbval, JupyterLab,
Colab) never rewrites the committed manifest, so the tests leave the checkout as they found it.

:func:`below` prints a bound instead of a value for differences that are rounding noise (1e-15 in float64,
1e-7 in float32): their digits change with the CPU and the thread count, a bound does not.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

__all__ = ["MARKER", "WRITE_ENV", "Results", "below", "prose_tolerance"]

WRITE_ENV = "TFORMER_WRITE_RESULTS"

# A number (optionally with thousands separators, a sign, a percent sign or markdown emphasis) followed by
# <!-- result: key -->.
MARKER = re.compile(
    r"(?P<number>[-+−]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(?:%|×)?\s*\**\s*<!--\s*result:\s*(?P<key>[\w.\-]+)\s*-->"
)


def prose_tolerance(number: str) -> float:
    """Half a unit in the last printed digit of ``number`` (e.g. ``"0.8507"`` -> 5e-5, ``"1,024"`` -> 0.5)."""
    mantissa = re.split(r"[eE]", number)[0]
    exponent = int(re.split(r"[eE]", number)[1]) if re.search(r"[eE]", number) else 0
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** (exponent - decimals)


class Results:
    """Writes the numbers one chapter quotes to ``<directory>/<chapter>.json``.

    Values are kept in ``entries``; the file is written only under ``make sync`` (see the module docstring).
    Each record merges into the file, so while a chapter reruns (under nbval, say) the values another chapter
    reads from it (15_summary reads them all) never disappear. ``make sync`` deletes the file before it
    executes the notebook, so a key the notebook no longer records does not survive there.

    Args:
        chapter: the notebook's stem, e.g. ``"05_hand_calculation"``.
        directory: where the manifest lives, relative to the working directory (notebooks run from
            ``notebooks/``, so the default is ``notebooks/results/``).

    Raises:
        ValueError: if ``chapter`` is empty or contains a path separator.
    """

    def __init__(self, chapter: str, directory: str | Path = "results") -> None:
        if not chapter or "/" in chapter or "\\" in chapter:
            raise ValueError(f"chapter: expected a notebook stem like '05_hand_calculation', got {chapter!r}")
        self.path = Path(directory) / f"{chapter}.json"
        self._entries: dict[str, dict[str, float | None]] = {}

    @property
    def entries(self) -> dict[str, dict[str, float | None]]:
        """What this run recorded: ``{key: {"value": ..., "tol": ...}}`` (a copy)."""
        return {key: dict(entry) for key, entry in self._entries.items()}

    def record(self, key: str, value: float, *, tol: float | None = None) -> float:
        """Record ``value`` under ``key`` and return it unchanged.

        Args:
            key: letters, digits, ``_``, ``.`` or ``-``; unique within the chapter.
            value: a finite real number (a Python or NumPy scalar, or a one-element tensor).
            tol: absolute tolerance for the prose check; ``None`` means "as printed" (half a unit in the
                last digit). Give one for values that vary with the CPU (training curves, timings).

        Raises:
            ValueError: if ``key`` has other characters, or ``value`` is not finite, or ``tol`` is negative.
            TypeError: if ``value`` is not a real number.
        """
        if not re.fullmatch(r"[\w.\-]+", key):
            raise ValueError(f"key: expected letters, digits, '_', '.' or '-', got {key!r}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"value: expected a real number, got {type(value).__name__}") from None
        if not math.isfinite(number):
            raise ValueError(f"value: expected a finite number for {key!r}, got {number}")
        if tol is not None and tol < 0:
            raise ValueError(f"tol: expected >= 0, got {tol}")
        self._entries[key] = {"value": float(f"{number:.10g}"), "tol": tol}
        if os.environ.get(WRITE_ENV) != "1":
            return value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename, so a chapter that reads this manifest (15_summary) never sees half a file.
        merged = json.loads(self.path.read_text()) if self.path.exists() else {}
        merged.update(self._entries)
        temporary = self.path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(merged, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        os.replace(temporary, self.path)
        return value


def below(value: float, limit: float) -> str:
    """Return ``"< {limit}"`` after checking that ``abs(value) < limit``: how a notebook prints rounding noise.

    A difference such as ``max |ours − torch|`` in float64 is about 1e-15, and its digits change with the CPU
    model and the thread count; a stored output must not. Printing the bound keeps the output repeatable and
    still says what was checked.

    Args:
        value: the measured difference (a Python or NumPy scalar, or a one-element tensor).
        limit: the bound it must stay under, e.g. ``1e-12`` in float64 or ``1e-5`` in float32.

    Returns:
        The bound as text, e.g. ``"< 1e-12"``.

    Raises:
        TypeError: if ``value`` or ``limit`` is not a real number.
        ValueError: if ``limit`` is not positive, or ``abs(value) >= limit`` (or ``value`` is NaN).
    """
    if hasattr(value, "detach"):  # a tensor that may require grad: float() of it would warn
        value = value.detach()
    try:
        number, bound = float(value), float(limit)
    except (TypeError, ValueError):
        raise TypeError(f"value, limit: expected real numbers, got {type(value).__name__}, "
                        f"{type(limit).__name__}") from None
    if not bound > 0:
        raise ValueError(f"limit: expected a positive number, got {limit!r}")
    if not abs(number) < bound:
        raise ValueError(f"value: expected |value| < {bound:.0e}, got {number!r}")
    return f"< {bound:.0e}".replace("e-0", "e-")
