"""Classical Chinese poems for a character language model: 11,458 five-character Tang poems, shipped.

The text is a subset of the 全唐詩 (Complete Tang Poems) in the ``chinese-poetry`` collection (MIT licence,
``tang_poems/LICENSE``), made by ``tools/vendor_poems.py``: five-character quatrains (four lines) and regulated
verse (eight lines) written only in the collection's 3,000 most frequent characters, traditional characters as
printed there. One poem per line: couplets of five characters, ``，``, five characters, ``。``.

Used in ``17_small_gpt``.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from tformer._checks import check_int, check_strs
from tformer.data.text import SplitText

__all__ = ["COUPLET", "SOURCE", "couplet_form_share", "distinct_ngrams", "load_tang_poems", "repeat_rate"]

SOURCE = "chinese-poetry 2.0.1, 全唐詩 (MIT licence; tools/vendor_poems.py)"
COUPLET = re.compile(r"[^\W\d_]{5}，[^\W\d_]{5}。")  # one couplet in the poems' form


@functools.lru_cache(maxsize=4)  # the result is immutable
def load_tang_poems(*, validation_every: int = 10) -> SplitText:
    """The poems, split by poem: poem ``i`` goes to validation when ``i % validation_every ==
    validation_every - 1``, else to train (no shuffling, so the split never changes).

    Returns:
        A :class:`~tformer.data.text.SplitText`; each poem ends with ``"\\n"``. With the default, 10,313 poems
        (446,105 characters with their newlines) train and 1,145 (49,457) validate. The poems use 2,999
        characters (besides ``，`` and ``。``), every one of them in train.

    Raises:
        TypeError / ValueError: if ``validation_every`` is not an int ≥ 2.
    """
    validation_every = check_int("validation_every", validation_every, 2)
    text = resources.files("tformer.data").joinpath("tang_poems", "wuyan.txt").read_text(encoding="utf-8")
    poems = text.splitlines(keepends=True)
    held = validation_every - 1
    return SplitText(
        train="".join(p for i, p in enumerate(poems) if i % validation_every != held),
        validation="".join(p for i, p in enumerate(poems) if i % validation_every == held),
        source=SOURCE,
    )


def couplet_form_share(text: str) -> float:
    """The share of a text's couplets that have the poems' form: of the pieces that end with ``。`` (each line
    of the text cut after every ``。``), the fraction that are exactly five characters, ``，``, five characters.

    A measure of form a reader can see move as a model learns (or as sampling gets wilder); 1.0 for the
    corpus itself.

    Shape:
        none: a str in, a float in [0, 1] out; 0.0 when the text has no ``。``.

    Raises:
        TypeError: if ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    pieces = [piece for line in text.split("\n") for piece in re.findall(r"[^。]*。", line)]
    return sum(bool(COUPLET.fullmatch(piece)) for piece in pieces) / len(pieces) if pieces else 0.0


_PUNCTUATION = "，。"


def _check_poems(poems: object) -> list[str]:
    if not isinstance(poems, (list, tuple)):  # a str is refused by check_strs, with its own hint
        if isinstance(poems, str):
            return check_strs("poems", poems, "poem", "put one poem in a list")
        raise TypeError(f"poems: expected a list of poems (str), got {type(poems).__name__}")
    return check_strs("poems", poems, "poem", "put one poem in a list")


def repeat_rate(poems: list[str]) -> float:
    """The share of the poems' characters (``，``, ``。`` and white space aside) that already occurred earlier in
    the same poem.

    A measure of a writer that loops: real poems repeat some characters (a share of about 0.02 in the corpus's
    validation poems); greedy decoding of a small model repeats far more.

    Shape:
        a list of str in, a float in [0, 1] out; 0.0 when there are no characters.

    Raises:
        TypeError: if ``poems`` is not a list or tuple of str (a bare str is refused too).
    """
    poems = _check_poems(poems)
    seen_before = total = 0
    for poem in poems:
        seen: set[str] = set()
        for ch in poem:
            if ch in _PUNCTUATION or ch.isspace():
                continue
            total += 1
            seen_before += ch in seen
            seen.add(ch)
    return seen_before / total if total else 0.0


def distinct_ngrams(poems: list[str], n: int = 2) -> float:
    """Distinct-n (Li et al. 2016, §4.3): different n-character sequences / all n-character sequences, over all
    the poems together, cut at ``，``, ``。`` and white space first (so a sequence never spans a line's end and
    the punctuation's own pairs do not count).

    1.0 means no sequence occurs twice; a writer that says the same thing in every poem scores low.

    Shape:
        a list of str in, a float in [0, 1] out; 0.0 when no poem has n characters.

    Raises:
        TypeError: if ``poems`` is not a list or tuple of str (a bare str is refused too), or ``n`` is not an int.
        ValueError: if ``n < 1``.
    """
    poems = _check_poems(poems)
    n = check_int("n", n, 1)
    grams = [line[i : i + n] for poem in poems for line in re.split(rf"[{_PUNCTUATION}\s]+", poem)
             for i in range(len(line) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0
