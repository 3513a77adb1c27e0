"""``tools/prose_numbers.py`` rewrites the digits before result markers from a manifest, and only those."""

from __future__ import annotations

from tools.prose_numbers import rewrite, written_like


def test_digits_follow_the_manifest_in_the_prose_s_own_format() -> None:
    assert written_like("4.8", 7.1085) == "7.1"
    assert written_like("1,024", 2048.4) == "2,048"
    assert written_like("-1.50", -3.754) == "-3.75"  # the prose's ASCII minus is kept
    assert written_like("−0.5", -0.25) == "−0.2"
    assert written_like("0.0", -0.01) == "0.0"  # rounds to zero: no minus sign


def test_markers_split_over_comment_lines_and_bold_or_percent_are_handled() -> None:
    manifest = {"a.min": {"value": 7.11, "tol": None}, "b": {"value": 95.04, "tol": 0.5}, "c": {"value": 3.0, "tol": None}}
    source = ("# took 4.8<!-- result: a.min\n# --> s, scored **93.5%**<!-- result: b --> and\n"
              "# 2<!--\n# result: c --> times; 5<!-- result: unknown --> stays\n")
    new, changes = rewrite(source, manifest)
    assert new == ("# took 7.1<!-- result: a.min\n# --> s, scored **95.0%**<!-- result: b --> and\n"
                   "# 3<!--\n# result: c --> times; 5<!-- result: unknown --> stays\n")
    assert changes == [("a.min", "4.8", "7.1"), ("b", "93.5", "95.0"), ("c", "2", "3")]
