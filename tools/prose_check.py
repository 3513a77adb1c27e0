"""Measure each chapter's main text and fail a chapter that breaks the edition's prose rules.

Usage:
    python tools/prose_check.py [notebooks/NN_name.py ...]   check the chapters named (default: every chapter)
    python tools/prose_check.py --verbose ...                 also list each run-record sentence and each hit
    python tools/prose_check.py --report                      the table for every chapter; never fails
    python tools/prose_check.py --enforced                    every chapter not listed in pyproject.toml's
                                                              [tool.tformer] prose_pending (what `make test` runs)

The **main text** of a chapter is its markdown cells, minus

- ``<details ...>…</details>`` blocks (the collapsed "How this was measured" blocks and the worked answers),
- the ``## Exercises`` section (from a level-2 heading starting "Exercises" to the next level-2 heading or the
  end of the chapter),
- HTML comments (the result markers ``<!-- result: key -->``),

with link targets dropped (``[text](url)`` counts as ``text``) and code spans kept as words. A word is a
whitespace-separated token with at least one letter or digit.

Rules (exit status 1, naming the chapter and the rule, when one is broken):

1. **Length**: at most ``WORD_LIMITS[NN]`` words of main text (``DEFAULT_WORD_LIMIT`` for a chapter not listed).
2. **Run record**: at most ``RUN_RECORD_LIMIT`` run-record sentences per 1,000 words of main text (the preface
   ``00`` is exempt). A run-record sentence is a sentence of the main text that matches one of
   ``RUN_RECORD_PATTERNS`` (seeds, random draws, budgets, "borderline", "not measured", this or the stored run,
   trial runs, what is asserted, the protocol, tolerances, or a numeric range such as ``25.0–44.3%``). These
   belong in a collapsed "How this was measured" block.
3. **Workshop words**: none of ``WORKSHOP_PATTERNS`` (issue, nbval, manifest, marker, ``make sync``, CI, results
   check) anywhere in the markdown, blocks and exercises included, except inside the preface's how-to-run
   section: a level-2 section of ``00_*`` whose heading matches ``PREFACE_RUN_HEADING`` (a word "run", e.g.
   "## Run it" or "## How to run the chapters").
4. **Blocks** open and close in one markdown cell (an unclosed ``<details>`` would hide the rest of the chapter
   from this count, and would not render as a block in JupyterLab).
5. **"Seed"** means a random seed only: none of ``SEED_MISUSE_PATTERNS`` ("the seeds say", "seed article",
   "both seeds", "(seed)", …) anywhere in the markdown. The source articles are "the source articles" or are
   named by their titles.

Chapters not yet held to the rules are listed in ``pyproject.toml`` under ``[tool.tformer] prose_pending``
(chapter numbers as strings). ``--enforced`` checks every other chapter, and also fails when a pending chapter
already passes (it must then leave the list, so the list cannot hide a finished chapter).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------------------------------- limits
DEFAULT_WORD_LIMIT = 3500
WORD_LIMITS = {"01": 2500}  # chapter number -> words of main text
RUN_RECORD_LIMIT = 2.0  # run-record sentences per 1,000 words of main text
RUN_RECORD_EXEMPT = {"00"}  # the preface explains how the book is run
PREFACE = "00"
# The preface's how-to-run section, where workshop words are allowed: a level-2 heading with the word "run".
PREFACE_RUN_HEADING = re.compile(r"\brun(?:s|ning)?\b", re.IGNORECASE)

# ---------------------------------------------------------------------------------------------------- patterns
_NUM = r"\d+(?:[.,]\d+)?"
# Words after which "3–5" names chapters, sections, steps or years, not the spread of a measurement.
_NOT_A_RANGE_AFTER = (
    r"(?:chapters?|ch\.|sections?|§§?|steps?|exercises?|cells?|lines?|figures?|fig\.|tables?|pages?|pp?\.|"
    r"eqs?\.|equations?|parts?|appendix|appendices|versions?|python|torch|ids?|indices|index|positions?|rows?|"
    r"columns?)"
)
_DRAW_COUNT = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|several|many|more|all|other|these|those|both|"
    r"random|separate|independent|further|different|some|most|later|earlier)"
)
# "step 3 draws a line", "we draw the grid": the verb, not a random draw.
_DRAW_VERB_OBJECT = r"\s+(?:a|an|the|it|them|its|their|on|from|one|this|that|each|every|lines?|arrows?)\b"
_DRAW_ONE = (
    r"(?:this|that|each|every|another|one|same|first|second|third|last|single|random|new|fresh|later|"
    r"different|stored|other)"
)

# "25.0–44.3%", "8–8 steps", "0.28-1.6": two numbers joined by an en dash (spaces allowed) or a hyphen (none).
_RANGE = re.compile(rf"(?<![\w.,/–-]){_NUM}%?(?:\s?–\s?|-){_NUM}(?![.,]?\d)")
_RANGE_EXEMPT_BEFORE = re.compile(
    rf"\b{_NOT_A_RANGE_AFTER}\s*(?:\d+[.,]?\s*(?:and|or|,)?\s*)*$", re.IGNORECASE
)
_RANGE_EXEMPT_SIGN = re.compile(r"§§?\s*$")
_CHAPTER_RANGE = re.compile(r"0\d\s?[–-]\s?[01]\d|(?:19|20)\d\d[–-](?:\d\d|(?:19|20)\d\d)")  # or years


def numeric_ranges(text: str) -> list[str]:
    """The numeric ranges in ``text``, except those naming chapters, sections, steps, years of a version, …"""
    found = []
    for match in _RANGE.finditer(text):
        before = text[max(0, match.start() - 40) : match.start()]
        if _RANGE_EXEMPT_BEFORE.search(before) or _RANGE_EXEMPT_SIGN.search(before):
            continue
        if _CHAPTER_RANGE.fullmatch(match.group(0)):  # "(03–08)" names chapters; "2014–15" years
            continue
        found.append(match.group(0))
    return found


#: (name, regex) pairs; a sentence that matches any of them is a run-record sentence (case-insensitive).
RUN_RECORD_PATTERNS: list[tuple[str, re.Pattern[str] | None]] = [
    ("seed", re.compile(r"\bseeds?\b", re.IGNORECASE)),
    (
        "draw",
        re.compile(
            rf"\b{_DRAW_COUNT}\s+(?:more\s+|other\s+|random\s+|fresh\s+|new\s+)*draws\b"
            rf"|\b{_DRAW_ONE}\s+draw\b(?!{_DRAW_VERB_OBJECT})"
            r"|\b(?:across|over|between|per|in\s+all|of\s+the)\s+draws?\b"
            r"|\brandom\s+draws?\b",
            re.IGNORECASE,
        ),
    ),
    ("budget", re.compile(r"\bbudgets?\b", re.IGNORECASE)),
    ("borderline", re.compile(r"\bborderline\b", re.IGNORECASE)),
    ("not measured", re.compile(r"\bnot\s+(?:been\s+)?measured\b", re.IGNORECASE)),
    (
        "this or the stored run",
        re.compile(r"\bthis\s+run\b|\bstored\s+runs?\b|\bin\s+the\s+stored\s+\w+", re.IGNORECASE),
    ),
    ("trial run", re.compile(r"\btrial\s+runs?\b", re.IGNORECASE)),
    ("asserted", re.compile(r"\bassert(?:s|ed|ing|ions?)?\b", re.IGNORECASE)),
    ("protocol", re.compile(r"\bprotocols?\b", re.IGNORECASE)),
    ("tolerance", re.compile(r"\btolerances?\b", re.IGNORECASE)),
    ("numeric range", None),  # two numbers joined by an en dash or a hyphen; see numeric_ranges()
]

#: Words of the workshop (case-insensitive unless noted); they belong to README, not to the book's prose.
WORKSHOP_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    # "issue" the noun; "the loop issues 64 products" (the verb, followed by what is issued) is English.
    (
        "issue",
        re.compile(
            r"\bissue\b(?!\s+(?:a|an|the|its|their|every|each|all|only|no)\b)"
            r"|\bissues\b(?!\s+(?:\**\d|(?:a|an|the|one|two|three|four|its|their|many|more|few|"
            r"every|each|all|only|no|small|large)\b))",
            re.IGNORECASE,
        ),
    ),
    ("nbval", re.compile(r"\bnbval\b", re.IGNORECASE)),
    ("manifest", re.compile(r"\bmanifests?\b", re.IGNORECASE)),
    ("marker", re.compile(r"\bmarkers?\b", re.IGNORECASE)),
    ("make sync", re.compile(r"\bmake\s+sync\b", re.IGNORECASE)),
    ("CI", re.compile(r"\bCI\b")),  # the word in capitals only ("ci" is not a word of the book)
    ("results check", re.compile(r"\bresults?\s+checks?\b", re.IGNORECASE)),
]

_SAYS = (
    r"(?:say|says|said|write|writes|wrote|call|calls|called|quote|quotes|quoted|use|uses|used|put|puts|give|"
    r"gives|show|shows|describe|describes|described|claim|claims|claimed|explain|explains|explained|mention|"
    r"mentions|mentioned|state|states|stated|argue|argues|argued|compare|compares|draw|draws|present|presents)"
)
#: The source articles called "seeds" (case-insensitive).
SEED_MISUSE_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "the seeds say",
        re.compile(
            rf"\b(?:the|one|a|each|every|another|other|first|second|third|two|three|"
            rf"all)\s+(?:source\s+)?seeds?\s+{_SAYS}\b",
            re.IGNORECASE,
        ),
    ),
    (
        "seed article",
        re.compile(r"\bseed\s+(?:articles?|texts?|posts?|essays?|authors?|series|sources?)\b", re.IGNORECASE),
    ),
    # "the seeds' spread" (their range, mean, runs, …) is about random seeds and is not flagged.
    (
        "seeds'",
        re.compile(
            r"\b(?:seeds['’](?!\w)|seed['’]s\b)(?!\s+(?:spread|ranges?|means?|median|runs?|"
            r"results?|scores?|values?|min|max|minimum|maximum|variance|worst|best|lowest|highest|"
            r"initiali[sz]ations?|weights|batches|models?)\b)",
            re.IGNORECASE,
        ),
    ),
    ("both seeds", re.compile(r"\bboth\s+seeds\b", re.IGNORECASE)),
    ("(seed)", re.compile(r"\(\s*seeds?\s*\)", re.IGNORECASE)),
    ("seeds of this book", re.compile(r"\bseeds\s+of\s+(?:this|the)\s+book\b", re.IGNORECASE)),
    ("source seeds", re.compile(r"\bsource\s+seeds?\b", re.IGNORECASE)),
]

# ---------------------------------------------------------------------------------------------------- text
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_DETAILS_TAG = re.compile(r"<details\b[^>]*>|</details\s*>", re.IGNORECASE)
_HEADING2 = re.compile(r"^##(?!#)\s*(.*)$", re.MULTILINE)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.DOTALL)
_WORD = re.compile(r"\S*[^\W_]\S*")  # a token with at least one letter or digit (any script)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)*_]*\s+(?=[\"'“‘(*_`$\[]*[A-Z0-9])")
_UNIT_START = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|\||#{1,6}\s|>)")


def strip_details(text: str) -> str:
    """``text`` without its ``<details>…</details>`` blocks (nested blocks included; an unclosed one runs to the end)."""
    out: list[str] = []
    depth = 0
    pos = 0
    for tag in _DETAILS_TAG.finditer(text):
        closing = tag.group(0).startswith("</")
        if depth == 0 and not closing:
            out.append(text[pos : tag.start()])
        depth = max(0, depth - 1) if closing else depth + 1
        pos = tag.end()
    if depth == 0:
        out.append(text[pos:])
    return "".join(out)


def split_sections(text: str) -> list[tuple[str, str]]:
    """(level-2 heading, text) pairs; the text before the first ``## `` heading has the heading ``""``."""
    sections: list[tuple[str, str]] = []
    starts = [(m.start(), m.group(1).strip()) for m in _HEADING2.finditer(text)]
    if not starts or starts[0][0] > 0:
        sections.append(("", text[: starts[0][0] if starts else len(text)]))
    for i, (start, heading) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        sections.append((heading, text[start:end]))
    return sections


def is_exercises(heading: str) -> bool:
    return heading.lower().startswith("exercises")


def plain(text: str) -> str:
    """Markdown to plain words: links to their text, emphasis and code backticks removed."""
    text = _LINK.sub(r"\1", text)
    return text.replace("`", "").replace("**", "")


def words(text: str) -> int:
    return len(_WORD.findall(plain(text)))


def sentences(text: str) -> list[str]:
    """Sentences of markdown text: paragraphs, list items, table rows and headings end one; so do . ! ?"""
    units: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        current: list[str] = []
        for line in block.splitlines():
            if _UNIT_START.match(line) and current:
                units.append(" ".join(current))
                current = []
            if line.strip():
                current.append(line.strip())
        if current:
            units.append(" ".join(current))
    found: list[str] = []
    for unit in units:
        found.extend(s.strip() for s in _SENTENCE_END.split(unit) if _WORD.search(s))
    return found


def run_record_reasons(sentence: str) -> list[str]:
    """The names of the run-record patterns ``sentence`` matches (empty when it is not a run-record sentence)."""
    text = plain(sentence)
    no_math = _MATH.sub(" ", text)
    return [
        name
        for name, pattern in RUN_RECORD_PATTERNS
        if (pattern.search(text) if pattern is not None else numeric_ranges(no_math))
    ]


@dataclass
class Chapter:
    path: Path
    number: str
    main_words: int = 0
    run_record: list[tuple[str, list[str]]] = field(default_factory=list)  # (sentence, pattern names)
    workshop: list[tuple[str, str]] = field(default_factory=list)  # (pattern name, context)
    seed_misuse: list[tuple[str, str]] = field(default_factory=list)
    unbalanced: list[str] = field(
        default_factory=list
    )  # first line of each cell whose <details> do not close

    @property
    def word_limit(self) -> int:
        return WORD_LIMITS.get(self.number, DEFAULT_WORD_LIMIT)

    @property
    def rate(self) -> float:
        return 1000.0 * len(self.run_record) / self.main_words if self.main_words else 0.0

    def violations(self) -> list[str]:
        found = []
        if self.main_words > self.word_limit:
            found.append(f"length: {self.main_words:,} words of main text (limit {self.word_limit:,})")
        if self.number not in RUN_RECORD_EXEMPT and self.rate > RUN_RECORD_LIMIT:
            found.append(
                f"run record: {len(self.run_record)} run-record sentences, {self.rate:.1f} per 1,000 words "
                f"(limit {RUN_RECORD_LIMIT:g}): move seeds, ranges, budgets and what is asserted into a "
                '"How this was measured" block'
            )
        if self.workshop:
            names = sorted({name for name, _ in self.workshop})
            found.append(f"workshop words: {len(self.workshop)} ({', '.join(names)})")
        if self.unbalanced:
            found.append(
                f"blocks: {len(self.unbalanced)} markdown cell(s) whose <details> and </details> do not pair up "
                f"(a block opens and closes in one cell): {self.unbalanced[0]!r}"
            )
        if self.seed_misuse:
            found.append(
                f'"seed" for the source articles: {len(self.seed_misuse)} (say "the source articles")'
            )
        return found


def _context(text: str, match: re.Match[str], width: int = 50) -> str:
    start, end = max(0, match.start() - width), min(len(text), match.end() + width)
    return " ".join(text[start:end].split())


_CELL = re.compile(r"^# %%(.*)$")


def markdown_of(path: Path) -> str:
    """The chapter's markdown cells, joined by blank lines."""
    return "\n\n".join(markdown_cells(path))


def markdown_cells(path: Path) -> list[str]:
    """The sources of the chapter's markdown cells.

    A percent-format source is read directly (a ``# %% [markdown]`` line, then ``# ``-commented lines up to the
    next ``# %%``), which keeps the check fast; a ``.ipynb`` is read as JSON.
    """
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        return [
            "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in cells
            if c["cell_type"] == "markdown"
        ]
    cells: list[str] = []
    current: list[str] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        header = _CELL.match(line)
        if header:
            if current is not None:
                cells.append("\n".join(current).strip("\n"))
            current = [] if re.match(r"\s*\[(?:markdown|md)\]", header.group(1)) else None
        elif current is not None:
            current.append(line[2:] if line.startswith("# ") else line[1:] if line.startswith("#") else line)
    if current is not None:
        cells.append("\n".join(current).strip("\n"))
    return cells


def chapter_number(path: Path) -> str:
    return path.name[:2]


def measure(path: Path) -> Chapter:
    """Measure one chapter's percent-format source (or notebook)."""
    chapter = Chapter(path=path, number=chapter_number(path))
    cells = [_COMMENT.sub("", cell) for cell in markdown_cells(path)]
    for cell in cells:
        tags = [t.group(0).startswith("</") for t in _DETAILS_TAG.finditer(cell)]
        if tags.count(True) != tags.count(False):
            chapter.unbalanced.append(cell.strip().splitlines()[0][:80])
    markdown = "\n\n".join(cells)

    # Main text: outside <details> blocks and outside the Exercises section.
    main = "\n\n".join(
        text for heading, text in split_sections(strip_details(markdown)) if not is_exercises(heading)
    )
    chapter.main_words = words(main)
    for sentence in sentences(main):
        reasons = run_record_reasons(sentence)
        if reasons:
            chapter.run_record.append((sentence, reasons))

    # Workshop words and "seed" misuse: everywhere in the prose, except the preface's how-to-run section.
    for heading, text in split_sections(markdown):
        allowed = chapter.number == PREFACE and bool(heading) and bool(PREFACE_RUN_HEADING.search(heading))
        flat = " ".join(text.split())
        if not allowed:
            for name, pattern in WORKSHOP_PATTERNS:
                chapter.workshop.extend((name, _context(flat, m)) for m in pattern.finditer(flat))
        for name, pattern in SEED_MISUSE_PATTERNS:
            chapter.seed_misuse.extend((name, _context(flat, m)) for m in pattern.finditer(flat))
    return chapter


# ---------------------------------------------------------------------------------------------------- CLI
def pending_chapters(pyproject: Path = ROOT / "pyproject.toml") -> set[str]:
    """Chapter numbers listed in ``[tool.tformer] prose_pending`` (not yet held to the rules)."""
    if not pyproject.exists():
        return set()
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    return {str(n).zfill(2) for n in config.get("tool", {}).get("tformer", {}).get("prose_pending", [])}


def table(chapters: list[Chapter], pending: set[str] = frozenset()) -> str:
    lines = [
        f"{'chapter':<34} {'words':>6} {'limit':>6} {'run-rec':>7} {'/1000w':>6} {'workshop':>8} {'seed':>5}  verdict",
    ]
    for c in chapters:
        verdict = "ok" if not c.violations() else "FAIL"
        if c.number in pending:
            verdict += " (pending)"
        lines.append(
            f"{c.path.stem:<34} {c.main_words:>6} {c.word_limit:>6} {len(c.run_record):>7} {c.rate:>6.1f} "
            f"{len(c.workshop):>8} {len(c.seed_misuse):>5}  {verdict}"
        )
    return "\n".join(lines)


def details(chapter: Chapter) -> str:
    lines = [f"--- {chapter.path.stem}"]
    for sentence, reasons in chapter.run_record:
        lines.append(f"  run record [{', '.join(reasons)}]: {sentence}")
    for name, context in chapter.workshop:
        lines.append(f"  workshop word [{name}]: …{context}…")
    for name, context in chapter.seed_misuse:
        lines.append(f"  seed misuse [{name}]: …{context}…")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "paths", nargs="*", type=Path, help="chapter sources (default: notebooks/[0-9][0-9]_*.py)"
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="list run-record sentences and hits")
    parser.add_argument("--report", action="store_true", help="print the table for every chapter; never fail")
    parser.add_argument("--enforced", action="store_true", help="check chapters not listed in prose_pending")
    parser.add_argument("--pyproject", type=Path, default=ROOT / "pyproject.toml", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    paths = args.paths or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
    if not paths:
        print("prose_check: no chapters found", file=sys.stderr)
        return 1
    chapters = [measure(p) for p in paths]
    pending = pending_chapters(args.pyproject) if args.enforced or args.report else set()
    print(table(chapters, pending))
    if args.verbose:
        for chapter in chapters:
            print(details(chapter))
    if args.report:
        return 0

    failed = False
    for chapter in chapters:
        problems = chapter.violations()
        if args.enforced and chapter.number in pending:
            if not problems:
                print(
                    f"prose_check: {chapter.path.stem} passes now: remove {chapter.number!r} from "
                    f"[tool.tformer] prose_pending in pyproject.toml",
                    file=sys.stderr,
                )
                failed = True
            continue
        for problem in problems:
            print(f"prose_check: {chapter.path.stem}: {problem}", file=sys.stderr)
            failed = True
    if failed and not args.verbose:
        print("prose_check: run with --verbose to list the sentences and words", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
