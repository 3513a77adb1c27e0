"""The Chinese edition's catalogues: extract, update and check them (``make po``, ``tests/book/test_translation.py``).

The Chinese book is built from the same staged notebooks as the English one: Sphinx's gettext builder extracts
every paragraph, heading and list item of the prose (the markdown source, markers included) into one ``.pot``
template per page, and ``sphinx-intl`` keeps ``locale/zh_CN/LC_MESSAGES/<page>.po`` in step with it. Code cells
and their outputs are not extracted: both editions show the same stored outputs.

Usage::

    python tools/catalogue.py update [PAGE ...]   # re-extract; refresh the catalogues of the translated pages
                                                 # (locale/zh_CN/translated.txt) and of any PAGE named
    python tools/catalogue.py check [PAGE ...]    # every problem of the translated pages' catalogues (or PAGE's)
                                                 # against the English as extracted now; exit 1 on any

A catalogue string is checked against its English: no banned rendering (``banned.tsv``), every strict glossary
term (``glossary.tsv``) carried over, the same result markers on the same numbers, the same inline code, maths and
link targets. A page listed in ``translated.txt`` must have every current English string translated, none fuzzy.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCALE = ROOT / "locale"
LANGUAGE = "zh_CN"
CATALOGUES = LOCALE / LANGUAGE / "LC_MESSAGES"
GLOSSARY = LOCALE / LANGUAGE / "glossary.tsv"
BANNED = LOCALE / LANGUAGE / "banned.tsv"
TRANSLATED = LOCALE / LANGUAGE / "translated.txt"

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_CODE = re.compile(r"(`+)(?P<code>.+?)\1", re.DOTALL)
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+?\$", re.DOTALL)
_LINK_TARGET = re.compile(r"\]\((?P<target>[^)\s]+)\)")
_URL = re.compile(r"https?://\S+")
_NUMERAL = re.compile(r"\d+(?:[.,]\d+)*")
# A number standing alone in the English, not part of a name such as "seq2seq" or "float64".
_ENGLISH_NUMERAL = re.compile(r"(?<![A-Za-z_\d])\d+(?:[.,]\d+)*(?![A-Za-z_\d])")
# Everyday English that contains a glossary term without meaning it ("pay attention to the shapes").
_EVERYDAY = re.compile(r"\bpa(?:y|ys|ying|id) attention\b", re.IGNORECASE)
_ENGLISH_WORDS = re.compile(r"[A-Za-z]{3,}\s+[A-Za-z]{3,}")

sys.path.insert(0, str(ROOT))  # tformer.book.results, imported where used: the HTML build reads rows() without torch


@dataclass(frozen=True)
class Term:
    """One glossary line: the English term (a regular expression), its one Chinese rendering, checked or not."""

    english: str
    chinese: str
    strict: bool

    def pattern(self) -> re.Pattern[str]:
        """The English as whole words (a hyphen may join it to another: "encoder-decoder"), case-insensitive,
        with a plural or verb ending allowed ("masks", "masked", "masking")."""
        return re.compile(rf"(?<!\w)(?:{self.english})(?:e?s|ed|ing)?(?!\w)", re.IGNORECASE)


def rows(path: Path) -> list[list[str]]:
    """The tab-separated rows of ``path`` (glossary.tsv, banned.tsv, summaries.tsv) after its comment lines and
    its header."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    return [line.split("\t") for line in lines[1:]]


def load_glossary(path: Path = GLOSSARY) -> list[Term]:
    """The glossary's terms. Raises ValueError naming the line when a row does not have four columns."""
    terms = []
    for row in rows(path):
        if len(row) != 4 or row[2] not in {"yes", "no"}:
            raise ValueError(f"{path.name}: expected english, chinese, yes|no, source; got {row!r}")
        terms.append(Term(row[0], row[1], row[2] == "yes"))
    return terms


def load_banned(path: Path = BANNED) -> dict[str, str]:
    """Banned rendering -> what to write instead."""
    return {row[0]: row[1] for row in rows(path)}


def translated_pages(path: Path = TRANSLATED) -> list[str]:
    """The pages whose catalogue must be complete (``index`` and the chapters listed in ``translated.txt``)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def english_words(msgid: str) -> str:
    """The prose of a catalogue string: without comments, inline code, maths, link targets and addresses."""
    text = _COMMENT.sub(" ", msgid)
    text = _EVERYDAY.sub(" ", text)
    text = _CODE.sub(" ", text)
    text = _MATH.sub(" ", text)
    text = _LINK_TARGET.sub("] ", text)
    return _URL.sub(" ", text)


def _markers(text: str) -> list[tuple[str, str | None]]:
    """(key, the number just before it) for every result marker, sorted (Chinese may reorder a sentence)."""
    from tformer.book.results import parse_markers

    return sorted(((marker.key, marker.number) for marker in parse_markers(text)), key=str)


def string_problems(msgid: str, msgstr: str, glossary: list[Term], banned: dict[str, str]) -> list[str]:
    """What is wrong with one translation of ``msgid`` (empty when nothing is).

    Checked: banned renderings; the English copied untranslated; strict glossary terms, each in its own
    rendering (a longer term's rendering does not count for a shorter one: 自注意力 is not 注意力, 光束搜索 is
    banned); every numeral of the English prose present in the Chinese; result markers with their numbers (the
    same (key, number) pairs, in any order); inline code, maths and link targets carried over unchanged.
    """
    found = [f"uses {bad!r}; write {use!r}" for bad, use in banned.items() if bad in msgstr]
    if msgid.startswith("\\"):  # a display formula (prose never starts with a backslash): shared, not translated
        return found + ([] if msgstr == msgid else ["a display formula: the Chinese must be the English, unchanged"])
    prose = english_words(msgid)
    if msgstr == msgid and _ENGLISH_WORDS.search(prose):
        return [*found, "the English copied, not translated"]
    english_text, chinese_text = _COMMENT.sub(" ", msgid), _COMMENT.sub(" ", msgstr)
    # Which strict terms the English has: longest first, each match blanked, so "rotary position embedding" is
    # not also read as "embedding" (nor "self-attention" as "attention").
    needed, words = [], prose
    for term in sorted(glossary, key=lambda t: len(t.english), reverse=True):
        pattern = term.pattern()
        if term.strict and pattern.search(words):
            needed.append(term)
        words = pattern.sub(lambda m: " " * len(m.group()), words)
    # The same on the Chinese side: longest rendering first, each blanked once looked for.
    chinese = chinese_text
    for term in sorted(glossary, key=lambda t: len(t.chinese), reverse=True):
        if term in needed and term.chinese not in chinese:
            found.append(f"English has {term.english!r}; the Chinese must say {term.chinese!r}")
        chinese = chinese.replace(term.chinese, " " * len(term.chinese))
    missing = sorted(set(_ENGLISH_NUMERAL.findall(prose)) - set(_NUMERAL.findall(chinese_text)))
    if missing:
        found.append(f"numbers of the English missing from the Chinese: {missing}")
    english_markers, chinese_markers = _markers(msgid), _markers(msgstr)
    if english_markers != chinese_markers:
        found.append(f"result markers: English {english_markers}, Chinese {chinese_markers}")
    for name, pattern, group in (("inline code", _CODE, 0), ("maths", _MATH, 0),
                                 ("link targets", _LINK_TARGET, "target")):
        english = {m.group(group) for m in pattern.finditer(english_text)}
        translated = {m.group(group) for m in pattern.finditer(chinese_text)}
        if english != translated:
            found.append(f"{name} differ: only English {sorted(english - translated)}, "
                         f"only Chinese {sorted(translated - english)}")
    return found


def catalogue_problems(
    po: Path,
    current: list[str] | None = None,
    *,
    glossary: list[Term] | None = None,
    banned: dict[str, str] | None = None,
) -> list[str]:
    """Every problem of one catalogue: untranslated or fuzzy strings, bad translations, and (with ``current``,
    the page's English strings as extracted now) English strings the catalogue does not have yet."""
    from babel.messages.pofile import read_po

    glossary = load_glossary() if glossary is None else glossary
    banned = load_banned() if banned is None else banned
    with po.open("rb") as handle:
        catalogue = read_po(handle)
    found = []
    for message in catalogue:
        if not message.id:
            continue
        head = f"{po.name}: {message.id[:50]!r}"
        if not message.string:
            found.append(f"{head}: not translated")
        elif message.fuzzy:
            found.append(f"{head}: fuzzy (the English changed; check the translation, then drop the flag)")
        else:
            found += [f"{head}: {problem}" for problem in string_problems(message.id, message.string,
                                                                           glossary, banned)]
    if current is not None:
        have = {message.id for message in catalogue if message.id}
        found += [f"{po.name}: {msgid[:50]!r}: new English, not in the catalogue (make po)"
                  for msgid in current if msgid not in have]
    return found


def extract(out: Path) -> Path:
    """Stage the book and run Sphinx's gettext builder into ``out``; return the folder of ``.pot`` files.

    Raises:
        RuntimeError: if the gettext builder fails (its own messages are printed above).
    """
    sys.path.insert(0, str(ROOT / "tools"))
    import build_book
    from sphinx.cmd.build import build_main

    with tempfile.TemporaryDirectory(prefix="tformer-pot-") as tmp, warnings.catch_warnings():
        # Sphinx's notices of its own future API changes, raised by the extensions
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        staging = Path(tmp) / "src"
        staging.mkdir()
        build_book.stage(ROOT / "notebooks", staging)
        status = build_main(["-q", "-b", "gettext", "-D", "gettext_location=0", "-d", str(Path(tmp) / "doctrees"),
                             str(staging), str(out)])
    if status != 0:
        raise RuntimeError(f"sphinx gettext builder failed with status {status}")
    return out


def current_strings(pot: Path) -> list[str]:
    """The msgids of one ``.pot`` template."""
    from babel.messages.pofile import read_po

    with pot.open("rb") as handle:
        return [message.id for message in read_po(handle) if message.id]


def update(pages: list[str]) -> None:
    """Re-extract the English and merge it into the catalogues of ``pages`` (new strings empty, changed ones
    fuzzy), with ``sphinx-intl``.

    Raises:
        ValueError: naming a page that the book does not have.
    """
    with tempfile.TemporaryDirectory(prefix="tformer-po-") as tmp:
        pots = extract(Path(tmp) / "pot")
        unknown = [page for page in pages if not (pots / f"{page}.pot").is_file()]
        if unknown:
            known = sorted(p.stem for p in pots.glob("*.pot"))
            raise ValueError(f"pages: expected pages of the book ({', '.join(known)}), got {unknown}")
        chosen = Path(tmp) / "chosen"
        chosen.mkdir()
        for page in pages:
            (chosen / f"{page}.pot").write_bytes((pots / f"{page}.pot").read_bytes())
        subprocess.run([sys.executable, "-m", "sphinx_intl", "update", "-p", str(chosen), "-l", LANGUAGE,
                        "-d", str(LOCALE), "-w", "0", "--no-obsolete"], check=True)


def check(pages: list[str]) -> list[str]:
    """Every problem of the catalogues of ``pages``, against the English as extracted now (as ``make test``).

    Raises:
        ValueError: naming a page that has no catalogue.
    """
    missing = [page for page in pages if not (CATALOGUES / f"{page}.po").is_file()]
    if missing:
        raise ValueError(f"pages: expected pages with a catalogue in {CATALOGUES} (make po PAGES=...), got {missing}")
    with tempfile.TemporaryDirectory(prefix="tformer-po-") as tmp:
        pots = extract(Path(tmp) / "pot")
        return [problem for page in pages
                for problem in catalogue_problems(CATALOGUES / f"{page}.po", current_strings(pots / f"{page}.pot"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("update", help="refresh the catalogues of the translated pages (and of PAGE)")
    up.add_argument("pages", nargs="*")
    check_parser = sub.add_parser("check", help="list every problem of the translated pages' catalogues (or PAGE's)")
    check_parser.add_argument("pages", nargs="*")
    args = parser.parse_args(argv)
    try:
        if args.command == "update":
            update(sorted(set(translated_pages()) | set(args.pages)))
            return 0
        pages = args.pages or translated_pages()
        problems = check(pages)
    except ValueError as err:
        print(f"catalogue: {err}", file=sys.stderr)
        return 1
    untracked = [page for page in pages if page not in translated_pages()]
    if untracked and not problems:
        print(f"catalogue: {', '.join(untracked)}: complete; add to {TRANSLATED.name} so that make test keeps it so")
    print("\n".join(problems) or f"catalogue: {len(pages)} page(s), no problem")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
