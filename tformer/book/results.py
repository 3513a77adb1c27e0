"""The results manifest: numbers a chapter's prose quotes, recorded by the code that computes them.

A notebook creates ``Results("05_hand_calculation")`` and calls ``record(key, value)`` for every number its
text states. The values land in ``results/<chapter>.json`` beside the notebook. In the prose, a quoted number
carries an invisible marker right after it (closing markup, a unit and a bracket may stand between them)::

    the output is **0.8507**<!-- result: output_0 -->, the list **[0.85, 1.24]**<!-- result: out_1 -->

:func:`parse_markers` attaches each marker to the number just before it; ``tests/book/test_results_manifest.py``
fails on a marker it cannot attach, on a prose number that differs from the recorded one by more than the
tolerance, and on a number in the prose (next to a unit such as ``%``, ``×``, ``nats``, ``steps``) that has no
marker at all.

**The tolerance rule** (one rule, enforced by :meth:`Results.record`):

- A deterministic value (an exact count, a closed form, a seeded computation that does not depend on float
  rounding order) is recorded with ``tol=None`` and must match the prose to the digits the prose prints: half
  a unit in the last printed digit (:func:`prose_tolerance`).
- A run-dependent value (a trained accuracy, a timing) carries an absolute ``tol`` with
  ``0 < tol < |value|`` and ``tol <= MAX_RELATIVE_TOL * |value|`` (10 %). A band wider than that does not pin
  the claim down: "about 5×" with ``tol=5`` passes for anything from 0 to 10, and ±10 points on 93.5 % lets
  a stale 95 % pass. Ten per cent is about the run-to-run spread of a timing ratio on a shared CPU (the widest
  honest band in the book); a trained value that moves more than that across seeds must be reported as a
  range, not one number. Where several seeds are run, :meth:`Results.record_runs` derives the band from their
  measured spread rather than from a guess.

**One run writes both.** The file is written only when the environment variable ``TFORMER_WRITE_RESULTS`` is
``1``, which ``tools/sync_notebooks.py`` (``make sync``) sets: re-running a notebook anywhere else (nbval,
JupyterLab, Colab) never rewrites the committed manifest. After the run, the sync stamps the digest of the
notebook's stored outputs (:func:`outputs_digest`) into the manifest under ``DIGEST_KEY``, so a test can tell
that the manifest and the stored outputs come from the same execution.

:func:`below` prints a bound instead of a value for differences that are rounding noise (1e-15 in float64,
1e-7 in float32): their digits change with the CPU and the thread count, a bound does not.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DIGEST_KEY",
    "MARKER",
    "MAX_RELATIVE_TOL",
    "NUMBER",
    "WRITE_ENV",
    "Marker",
    "Results",
    "Runs",
    "below",
    "check_tolerance",
    "outputs_digest",
    "parse_markers",
    "prose_tolerance",
]

WRITE_ENV = "TFORMER_WRITE_RESULTS"
DIGEST_KEY = "_outputs_sha256"
MAX_RELATIVE_TOL = 0.10

# A marker, whatever its key looks like: a key the checker rejects is reported, never skipped.
MARKER = re.compile(r"<!--\s*result:?(?P<key>[^>]*?)-->")
# A number as prose prints it: a sign (ASCII or U+2212), thousands separators in groups of three, decimals, an
# exponent. It may not continue a word, a number or a decimal ("x2", "3.5" read from its "5").
NUMBER = r"(?<![\w.])[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?"
# What may stand between a number and its marker: spaces, markdown emphasis, a closing bracket or parenthesis
# (the last item of a list such as [0.85, 1.24]) and a percent or times sign.
_ATTACHED = re.compile(rf"(?P<number>{NUMBER})(?P<between>[\s*_\])%×]*)$")
_KEY = re.compile(r"[\w.\-]+")


@dataclass(frozen=True)
class Marker:
    """One ``<!-- result: key -->`` in a markdown text.

    Attributes:
        key: the key as written (stripped); may be invalid, see ``problem``.
        number: the number the marker is attached to, as printed (``"1,024"``, ``"−0.338"``), or ``None``.
        context: up to 60 characters of the text before the marker (after the previous one), for messages.
        problem: why the marker cannot be checked (``""`` when it can).
        start: where ``number`` starts in the text (``-1`` without a number).
    """

    key: str
    number: str | None
    context: str
    problem: str = ""
    start: int = -1

    @property
    def value(self) -> float:
        """The attached number as a float (thousands separators dropped, U+2212 read as a minus)."""
        if self.number is None:
            raise ValueError(f"number: expected a number before the marker {self.key!r}, got none")
        return float(self.number.replace(",", "").replace("−", "-"))


def parse_markers(text: str) -> list[Marker]:
    """Every ``<!-- result: key -->`` in ``text``, each attached to the number just before it.

    The number may be followed by spaces, ``*``/``_`` emphasis, ``]``, ``)``, ``%`` or ``×`` before the
    marker, nothing else. A marker with no such number, or with a key that is not letters, digits, ``_``,
    ``.`` and ``-``, comes back with a ``problem`` instead of being skipped.

    Args:
        text: one markdown cell.

    Returns:
        The markers in order of appearance.
    """
    found = []
    previous_end = 0
    for match in MARKER.finditer(text):
        before = text[previous_end:match.start()]
        context = text[max(previous_end, match.start() - 60):match.start()].replace("\n", " ")
        key = match["key"].strip()
        attached = _ATTACHED.search(before)
        number = attached["number"] if attached else None
        if not _KEY.fullmatch(key):
            problem = f"key: expected letters, digits, '_', '.' or '-', got {key!r}"
        elif number is None:
            problem = "no number directly before the marker"
        else:
            problem = ""
        start = previous_end + attached.start("number") if attached else -1
        found.append(Marker(key, number, context, problem, start))
        previous_end = match.end()
    return found


def prose_tolerance(number: str) -> float:
    """Half a unit in the last printed digit of ``number`` (e.g. ``"0.8507"`` -> 5e-5, ``"1,024"`` -> 0.5)."""
    mantissa, _, exponent = number.replace(",", "").lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


def check_tolerance(key: str, value: float, tol: float | None) -> None:
    """Apply the tolerance rule (module docstring) to one record.

    Args:
        key: the record's key, named in the message.
        value: the recorded value.
        tol: ``None`` (deterministic: match as printed) or the absolute band of a run-dependent value.

    Raises:
        ValueError: if ``tol`` is not ``None`` and not ``0 < tol < |value|`` with
            ``tol <= MAX_RELATIVE_TOL * |value|``.
    """
    if tol is None:
        return
    limit = MAX_RELATIVE_TOL * abs(value)
    if not (0 < tol < abs(value) and tol <= limit):
        raise ValueError(
            f"tol: expected 0 < tol <= {MAX_RELATIVE_TOL:.0%} of |value| = {limit:.3g} for {key!r} "
            f"(value {value:.6g}), got {tol!r}"
        )


@dataclass(frozen=True)
class Runs:
    """What :meth:`Results.record_runs` measured over several runs (seeds).

    Attributes:
        mean, low, high: the mean, the minimum and the maximum of the runs.
        spread: the largest distance of a run from the mean (every run lies in ``mean ± spread``).
        count: the number of runs.
        quotable: True if the spread is within the tolerance rule, so the mean was recorded as one number.
    """

    mean: float
    low: float
    high: float
    spread: float
    count: int
    quotable: bool

    def __str__(self) -> str:
        """``low–high over N runs (mean m)``; without the mean when the runs disagree too much for one number."""
        mean = f" (mean {_short(self.mean)})" if self.quotable else ""
        return f"{_short(self.low)}–{_short(self.high)} over {self.count} runs{mean}"


def _short(value: float) -> str:
    """Four significant digits, with thousands separators instead of an exponent (36,180, not 3.618e+04)."""
    return f"{value:,.0f}" if 1e4 <= abs(value) < 1e15 else f"{value:.4g}"


class Results:
    """Writes the numbers one chapter quotes to ``<directory>/<chapter>.json``.

    Values are kept in ``entries``; the file is written only under ``make sync`` (see the module docstring).
    Each record merges into the file, so while a chapter reruns (under nbval, say) the values another chapter
    reads from it (16_summary reads them all) never disappear. ``make sync`` deletes the file before it
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
        self._entries: dict[str, dict[str, float | int | None]] = {}

    @property
    def entries(self) -> dict[str, dict[str, float | int | None]]:
        """What this run recorded: ``{key: {"value": ..., "tol": ...}}`` (a copy)."""
        return {key: dict(entry) for key, entry in self._entries.items()}

    def record(self, key: str, value: float, *, tol: float | None = None) -> float:
        """Record ``value`` under ``key`` and return it unchanged.

        Args:
            key: letters, digits, ``_``, ``.`` or ``-`` (not starting with ``_``); unique within the chapter.
            value: a finite real number (a Python or NumPy scalar, or a one-element tensor).
            tol: ``None`` for a deterministic value (the prose must match it as printed), else the absolute
                band of a run-dependent value, within the tolerance rule (module docstring).

        Raises:
            ValueError: if ``key`` has other characters, or ``value`` or ``tol`` is not finite (or does not fit
                a float), or ``tol`` breaks the tolerance rule. Nothing is recorded then.
            TypeError: if ``key`` is not a str, or ``value`` or ``tol`` is not a real number (a str, bytes, a
                bool, a tensor of more than one element are not; a NumPy scalar is converted to a float).
        """
        number = self._check(self._check_key(key), value)
        tol = _check_tol(key, tol)
        check_tolerance(key, number, tol)
        self._store(key, {"value": float(f"{number:.10g}"), "tol": tol})
        return value

    def record_runs(self, key: str, values: Iterable[float], *, tol: float | None = None) -> Runs:
        """Record what several runs (seeds) of one experiment gave: the range always, the mean if it is stable.

        ``key.min`` and ``key.max`` are the lowest and highest run, recorded with ``tol`` (the noise of a
        single run, e.g. across CPUs; ``None`` if a seeded run repeats exactly). ``key`` is the mean, with the
        measured spread (the largest distance of a run from the mean, raised to ``tol`` if that is larger) as
        its band, recorded only if that band obeys the tolerance rule. Otherwise the runs disagree too much
        for one number: the mean is not recorded, and prose that quotes it as ``key`` fails the check (quote
        ``key.min``–``key.max`` instead). ``key.runs`` is the number of runs. Print the returned summary, so
        the stored output shows the spread the band comes from.

        Args:
            key: as for :meth:`record`; ``key.min``, ``key.max`` and ``key.runs`` are recorded too.
            values: one value per run, at least two.
            tol: the band of one run's value, within the tolerance rule for both the lowest and highest run.

        Returns:
            The summary (mean, min, max, spread, count, quotable).

        Raises:
            ValueError: if ``key`` is not valid (see :meth:`record`), fewer than two values are given, a value
                or ``tol`` is not finite, or ``tol`` breaks the rule. Nothing is recorded then.
            TypeError: if ``values`` is a str or not iterable, or a value or ``tol`` is not a real number.
        """
        self._check_key(key)
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise TypeError(f"values: expected an iterable of real numbers, got {type(values).__name__}")
        numbers = [self._check(key, v, f"values[{i}]") for i, v in enumerate(values)]
        tol = _check_tol(key, tol)
        if len(numbers) < 2:
            raise ValueError(f"values: expected at least 2 runs for {key!r}, got {len(numbers)}")
        mean = math.fsum(numbers) / len(numbers)
        low, high = min(numbers), max(numbers)
        spread = max(abs(v - mean) for v in numbers)
        band = max(spread, tol or 0.0)
        quotable = band == 0 or (band < abs(mean) and band <= MAX_RELATIVE_TOL * abs(mean))
        check_tolerance(f"{key}.min", low, tol)  # both ends before either is stored
        check_tolerance(f"{key}.max", high, tol)
        self.record(f"{key}.min", low, tol=tol)
        self.record(f"{key}.max", high, tol=tol)
        self.record(f"{key}.runs", len(numbers))
        if quotable:
            self.record(key, mean, tol=band if band > 0 else None)
        return Runs(mean, low, high, spread, len(numbers), quotable)

    def load(self, chapter: str, key: str) -> tuple[float, float | None]:
        """``(value, tol)`` that ``chapter`` recorded under ``key`` when it last ran (its committed manifest).

        The other chapter's manifest is read from this one's directory. Chapter 16 quotes the whole book this
        way, so that no number is copied by hand.

        Raises:
            FileNotFoundError: if ``chapter`` has no manifest (the message says to run it first).
            KeyError: if the manifest records no ``key``.
        """
        path = self.path.parent / f"{chapter}.json"
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: run chapter {chapter} first (make sync NB=notebooks/{chapter}.py)")
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if key not in manifest:
            raise KeyError(f"chapter {chapter} records no result {key!r}")
        return manifest[key]["value"], manifest[key]["tol"]

    def quote(self, name: str, chapter: str, key: str) -> float:
        """Load ``key`` from ``chapter`` (:meth:`load`) and record it here as ``name``, with the source's tolerance.

        The quoting chapter's prose then marks ``name``, and the results check compares it like any number.

        Raises:
            FileNotFoundError, KeyError: as :meth:`load`; ValueError: if ``name`` is not a valid key.
        """
        value, tol = self.load(chapter, key)
        return self.record(name, value, tol=tol)

    def quote_range(self, name: str, chapter: str, key: str) -> tuple[float, float]:
        """Quote the lowest and highest run of a :meth:`record_runs` result as ``name.min`` and ``name.max``."""
        return self.quote(f"{name}.min", chapter, f"{key}.min"), self.quote(f"{name}.max", chapter, f"{key}.max")

    def runs(self, chapter: str, key: str) -> int:
        """How many runs (seeds) ``chapter`` recorded for the :meth:`record_runs` result ``key``."""
        return int(self.load(chapter, f"{key}.runs")[0])

    @staticmethod
    def _check_key(key: object) -> str:
        if not isinstance(key, str):
            raise TypeError(f"key: expected a str, got {type(key).__name__}")
        if not _KEY.fullmatch(key) or key.startswith("_"):
            raise ValueError(f"key: expected letters, digits, '_', '.' or '-' (not a leading '_'), got {key!r}")
        return key

    @staticmethod
    def _check(key: str, value: object, name: str = "value") -> float:
        number = _real_number(name, value, key)
        if number is None:
            raise TypeError(f"{name}: expected a real number for {key!r}, got {type(value).__name__}")
        return number

    def _store(self, key: str, entry: dict[str, float | int | None]) -> None:
        self._entries[key] = entry
        if os.environ.get(WRITE_ENV) != "1":
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename, so a chapter that reads this manifest (16_summary) never sees half a file.
        merged = json.loads(self.path.read_text()) if self.path.exists() else {}
        merged.update(self._entries)
        temporary = self.path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(merged, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        os.replace(temporary, self.path)


def _real_number(name: str, value: object, key: str) -> float | None:
    """``value`` as a finite float, ``None`` if it is not a real number (a bool, a str, a multi-element tensor)."""
    if hasattr(value, "detach") and hasattr(value, "numel"):  # a tensor: one element, not bool or complex
        if value.numel() != 1 or value.dtype.is_complex or str(value.dtype) == "torch.bool":  # type: ignore[attr-defined]
            return None
        value = value.detach().item()  # type: ignore[attr-defined]
    elif hasattr(value, "dtype") and hasattr(value, "item") and hasattr(value, "size"):  # a NumPy scalar or array
        if value.size != 1 or value.dtype.kind not in "iuf":  # type: ignore[attr-defined]
            return None
        value = value.item()  # type: ignore[attr-defined]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        raise ValueError(f"{name}: expected a finite number for {key!r}, got an int too large for a float") from None
    if not math.isfinite(number):
        raise ValueError(f"{name}: expected a finite number for {key!r}, got {number}")
    return number


def _check_tol(key: str, tol: object) -> float | None:
    """``tol`` as a float (or ``None``): a real finite number, not a bool, a str or a tensor."""
    if tol is None:
        return None
    if hasattr(tol, "detach") or (isinstance(tol, bool)):
        raise TypeError(f"tol: expected None or a real number for {key!r}, got {type(tol).__name__}")
    number = _real_number("tol", tol, key)
    if number is None:
        raise TypeError(f"tol: expected None or a real number for {key!r}, got {type(tol).__name__}")
    return number


def outputs_digest(notebook: dict) -> str:
    """SHA-256 of a notebook's stored code-cell outputs, as ``make sync`` stamps it into the manifest.

    Only what a reader sees counts: each output's type, text and MIME data (list-of-lines text joined),
    cell by cell; execution counts and metadata do not.

    Args:
        notebook: the ``.ipynb`` file's JSON (a dict, as ``json.load`` or ``nbformat`` gives it).

    Returns:
        64 hexadecimal characters.
    """

    def joined(text: str | list[str]) -> str:
        return text if isinstance(text, str) else "".join(text)

    cells = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        outputs = []
        for output in cell.get("outputs", []):
            data = {mime: joined(content) if isinstance(content, (str, list)) else content
                    for mime, content in output.get("data", {}).items()}
            outputs.append([output["output_type"], output.get("name", ""), joined(output.get("text", "")), data])
        cells.append(outputs)
    return hashlib.sha256(json.dumps(cells, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def below(value: float, limit: float) -> str:
    """Return ``"< {limit}"`` after checking that ``abs(value) < limit``: how a notebook prints rounding noise.

    A difference such as ``max |ours − torch|`` in float64 is about 1e-15, and its digits change with the CPU
    model and the thread count; a stored output must not. Printing the bound keeps the output repeatable and
    still says what was checked.

    Args:
        value: the measured difference (a Python or NumPy scalar, or a one-element tensor).
        limit: the bound it must stay under, e.g. ``1e-12`` in float64 or ``1e-5`` in float32.

    Returns:
        The bound as text, e.g. ``"< 1e-12"``: ``limit`` in the fewest significant digits that write it exactly
        (``1.4e-5`` prints ``"< 1.4e-5"``, never a rounded ``"< 1e-5"``), so the printed bound is the one checked.

    Raises:
        TypeError: if ``value`` or ``limit`` is not a real number.
        ValueError: if ``limit`` is not positive and finite, or ``abs(value) >= limit`` (or ``value`` is NaN).
    """
    if hasattr(value, "detach"):  # a tensor that may require grad: float() of it would warn
        value = value.detach()
    try:
        number, bound = float(value), float(limit)
    except (TypeError, ValueError):
        raise TypeError(f"value, limit: expected real numbers, got {type(value).__name__}, "
                        f"{type(limit).__name__}") from None
    if not (bound > 0 and math.isfinite(bound)):
        raise ValueError(f"limit: expected a positive number (finite), got {limit!r}")
    text = _bound_text(bound)
    if not abs(number) < min(bound, float(text)):  # the printed bound is the one checked
        raise ValueError(f"value: expected |value| < {text}, got {number!r}")
    return f"< {text}".replace("e-0", "e-")


def _bound_text(bound: float) -> str:
    """The shortest ``e``-notation text of ``bound`` (``1e-06``, ``1.4e-05``), equal to it up to float noise.

    ``0.1 * 5 * 1e-3`` is ``5.000000000000001e-04``; it prints as ``5e-04``, and :func:`below` then checks against
    the printed (smaller) number, so the printed claim always holds.
    """
    for digits in range(17):
        text = f"{bound:.{digits}e}"
        if abs(float(text) - bound) <= 1e-9 * bound:
            return text
    return f"{bound:.16e}"  # pragma: no cover (17 significant digits always round-trip)
