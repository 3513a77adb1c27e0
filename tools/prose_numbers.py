"""Rewrite the numbers before result markers in a chapter's prose from its manifest, after a `make sync`.

    .venv/bin/python tools/prose_numbers.py 10_encoder_decoder [--check]

Every ``<number><!-- result: key -->`` in ``notebooks/<chapter>.py`` gets the value the run recorded under
``key`` in ``notebooks/results/<chapter>.json``, written with the digits the prose already uses (decimals,
thousands separators and the minus sign kept). It prints each change; ``--check`` prints them and changes
nothing. It fixes only the digits: read the sentences around every change afterwards (an order or a "for
every seed" may no longer hold; the chapters' asserts catch most of those), then carry the prose into the
stored notebook with ``make sync`` or a markdown-only update. ``tests/book/test_results_manifest.py`` fails
on any prose number that differs from its recorded value by more than half a unit in its last digit.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
# number, what may stand between it and the marker (%, ×, bold, a bracket), and the marker, which may be
# split over two comment lines of the percent-format source ("<!-- result:\n# key -->").
_QUOTE = re.compile(
    r"(?<![\w.])(?P<number>[-−]?\d[\d,]*(?:\.\d+)?(?:[eE][-−+]?\d+)?)(?P<mid>[%×\])*_]*)"
    r"(?P<marker><!--\s*(?:#\s*)?result:\s*(?:#\s*)?(?P<key>[\w.-]+)\s*(?:#\s*)?-->)"
)


def written_like(old: str, value: float) -> str:
    """``value`` with ``old``'s decimals, thousands separator, exponent and minus sign (ASCII ``-`` or ``−``)."""
    digits = old.lstrip("-−")
    minus = "-" if old.startswith("-") else "−"
    if "e" in digits.lower():  # scientific notation, as "8.4e-6": same mantissa decimals, exponent without padding
        mantissa = digits.lower().split("e")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        new_mantissa, exponent = f"{abs(value):.{decimals}e}".split("e")
        sign = (minus if value < 0 and float(new_mantissa) != 0 else "")
        e_minus = "−" if "−" in digits else "-"
        return f"{sign}{new_mantissa}e{e_minus if int(exponent) < 0 else ''}{abs(int(exponent))}"
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    text = f"{abs(value):,.{decimals}f}" if "," in digits else f"{abs(value):.{decimals}f}"
    return (minus if round(value, decimals) < 0 else "") + text


def rewrite(source: str, manifest: dict) -> tuple[str, list[tuple[str, str, str]]]:
    """``source`` with every marked number set to its recorded value; and the (key, old, new) changes."""
    changes = []

    def replace(match: re.Match) -> str:
        key, old = match["key"], match["number"]
        if key not in manifest or not isinstance(manifest[key], dict):
            return match.group(0)
        new = written_like(old, manifest[key]["value"])
        if new != old:
            changes.append((key, old, new))
        return new + match["mid"] + match["marker"]

    return _QUOTE.sub(replace, source), changes


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapter", help="the notebook's stem, e.g. 10_encoder_decoder")
    parser.add_argument("--check", action="store_true", help="print the changes, write nothing")
    args = parser.parse_args(argv)
    py = NOTEBOOKS / f"{args.chapter}.py"
    manifest_path = NOTEBOOKS / "results" / f"{args.chapter}.json"
    if not py.exists():
        parser.error(f"chapter: expected a chapter such as 10_encoder_decoder, got {args.chapter!r} (no such file)")
    if not manifest_path.exists():
        parser.error(f"chapter: {args.chapter} records no results (no notebooks/results/{args.chapter}.json)")
    new, changes = rewrite(py.read_text(encoding="utf-8"), json.loads(manifest_path.read_text(encoding="utf-8")))
    for key, old, value in changes:
        print(f"{key}: {old} -> {value}")
    if changes and not args.check:
        py.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
