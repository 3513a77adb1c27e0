"""``tools/prose_numbers.py`` rewrites the digits before result markers from a manifest, and only those."""

from __future__ import annotations

import json

from tools.prose_numbers import NOTEBOOKS, rewrite, written_like


def test_digits_follow_the_manifest_in_the_prose_s_own_format() -> None:
    assert written_like("4.8", 7.1085) == "7.1"
    assert written_like("1,024", 2048.4) == "2,048"
    assert written_like("-1.50", -3.754) == "-3.75"  # the prose's ASCII minus is kept
    assert written_like("−0.5", -0.25) == "−0.2"
    assert written_like("0.0", -0.01) == "0.0"  # rounds to zero: no minus sign
    assert written_like("8.4e-6", 8.43e-6) == "8.4e-6" and written_like("1.7e-5", 2.26e-4) == "2.3e-4"
    assert written_like("3e2", 1234.0) == "1e3"


def test_every_chapter_s_prose_already_shows_its_manifest() -> None:
    """On the stored book the tool changes nothing (chapter 05 quotes numbers such as 8.4e-6)."""
    for py in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py")):
        manifest = NOTEBOOKS / "results" / f"{py.stem}.json"
        if manifest.exists():
            assert rewrite(py.read_text(encoding="utf-8"), json.loads(manifest.read_text(encoding="utf-8")))[1] == [], py


def test_markers_split_over_comment_lines_and_bold_or_percent_are_handled() -> None:
    manifest = {"a.min": {"value": 7.11, "tol": None}, "b": {"value": 95.04, "tol": 0.5}, "c": {"value": 3.0, "tol": None}}
    source = ("# took 4.8<!-- result: a.min\n# --> s, scored **93.5%**<!-- result: b --> and\n"
              "# 2<!--\n# result: c --> times; 5<!-- result: unknown --> stays\n")
    new, changes = rewrite(source, manifest)
    assert new == ("# took 7.1<!-- result: a.min\n# --> s, scored **95.0%**<!-- result: b --> and\n"
                   "# 3<!--\n# result: c --> times; 5<!-- result: unknown --> stays\n")
    assert changes == [("a.min", "4.8", "7.1"), ("b", "93.5", "95.0"), ("c", "2", "3")]
