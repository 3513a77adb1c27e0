"""Real Chinese–English sentences: the HSK graded corpus, a fixed split, and characters aligned with pinyin.

Read by chapter 11 (real sentences). The sentences come from the ``hsk-sentences-audio`` package
(PyPI, version 1.0.0, https://github.com/no7z/hsk-sentences-audio): 4,354 graded Chinese sentences (HSK 3.0 levels
1–6) with an English translation, pinyin with tone numbers and a word segmentation, shipped as JSON inside the
wheel, so nothing is downloaded. Attribution: *hsk-sentences-audio contributors*; the package's code is MIT and
its **dataset is licensed CC-BY-SA-4.0** (package metadata: ``License: MIT (code); CC-BY-SA-4.0 (packaged
dataset)``): keep this attribution when redistributing the sentences or anything derived from them.

- :func:`load_hsk` reads the JSON into frozen :class:`HskSentence` records. It drops, and reports by id, the
  entries whose English is a placeholder rather than a translation (``placeholder``, ``placeholder-p1``,
  ``placeholder-q1``, ``PH``: 82 in version 1.0.0; an empty one counts too) and repeated Chinese sentences (5), so that no test sentence
  is also a training sentence.
- :func:`split_hsk` makes the fixed, seeded train / validation / test split (400 test sentences by default).
- :func:`char_readings` pairs every Chinese character of a sentence with its numbered-pinyin syllable; the two
  align one to one in every sentence of version 1.0.0 (:func:`count_misaligned` counts the exceptions).
- :func:`most_frequent_readings` is the baseline a reader model must beat (each character read as its most
  frequent reading in training); :func:`readings_by_context` is the same count keyed by a context (the previous
  character, the word…), backing off to the character alone; and :func:`score_readings` scores any predicted readings the same way: overall,
  on polyphones (characters with more than one reading in training) and on characters unseen in training.
"""

from __future__ import annotations

import functools
import json
import os
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

from tformer._checks import check_int, is_int

__all__ = [
    "HskCorpus",
    "HskSentence",
    "HskSplit",
    "ReadingScores",
    "char_readings",
    "count_misaligned",
    "is_han",
    "is_placeholder",
    "load_hsk",
    "most_frequent_readings",
    "reading_counts",
    "readings_by_context",
    "score_readings",
    "split_hsk",
]

SOURCE = "hsk-sentences-audio 1.0.0 (hsk-sentences-audio contributors; data CC-BY-SA-4.0, code MIT)"

# CJK Unified Ideographs, Extension A and the compatibility block: the characters that carry a pinyin syllable.
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# Placeholders found in version 1.0.0 instead of a translation: "placeholder", "placeholder-p7", "placeholder-q1", "PH".
_PLACEHOLDER = re.compile(r"placeholder(-[a-z]+\d+)?|ph", re.IGNORECASE)
_FIELDS = ("id", "hsk_level", "topic", "sentence_type", "chinese", "translation", "pinyin_numbered", "tokens")


def is_han(char: str) -> bool:
    """Whether ``char`` (one character) is a Chinese character (CJK ideograph), i.e. read as one syllable."""
    return _HAN.fullmatch(char) is not None


def is_placeholder(english: str) -> bool:
    """Whether an English field is a placeholder (``placeholder``, ``placeholder-p1``, ``PH``…), not a translation."""
    return _PLACEHOLDER.fullmatch(english.strip()) is not None


@dataclass(frozen=True)
class HskSentence:
    """One graded sentence.

    Attributes:
        id: the corpus id, e.g. ``"hsk1-0001"``.
        level: HSK level, 1 (easiest) to 6.
        topic: e.g. ``"greetings"``, ``"food"`` (19 topics).
        sentence_type: ``"statement"``, ``"question"`` or ``"imperative"``.
        chinese: simplified Chinese with punctuation, e.g. ``"老师，您好！"``.
        english: the English translation, e.g. ``"Hello, teacher!"``.
        pinyin: numbered-pinyin syllables, one per Chinese character (tone 5 = neutral, ``v`` = ü), e.g.
            ``("lao3", "shi1", "nin2", "hao3")``.
        words: the word segmentation of the Chinese characters, e.g. ``("老师", "您", "好")``.
    """

    id: str
    level: int
    topic: str
    sentence_type: str
    chinese: str
    english: str
    pinyin: tuple[str, ...]
    words: tuple[str, ...]

    @property
    def characters(self) -> tuple[str, ...]:
        """The Chinese characters, punctuation left out: ``"老师，您好！"`` → ``("老", "师", "您", "好")``."""
        return tuple(c for c in self.chinese if is_han(c))


@dataclass(frozen=True)
class HskCorpus:
    """The kept sentences and what was dropped.

    Attributes:
        sentences: kept sentences, in file order.
        placeholder_ids: ids of the entries dropped because their English is a placeholder, or empty (blank).
        duplicate_ids: ids of the entries dropped because their Chinese repeats an earlier kept sentence.
        source: where the sentences came from, with the licence.
    """

    sentences: tuple[HskSentence, ...]
    placeholder_ids: tuple[str, ...]
    duplicate_ids: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class HskSplit:
    """A fixed train / validation / test split of :class:`HskSentence` records (each part in corpus order)."""

    train: tuple[HskSentence, ...]
    validation: tuple[HskSentence, ...]
    test: tuple[HskSentence, ...]


def _record(raw: object, index: int, where: str) -> HskSentence:
    """One JSON record as an :class:`HskSentence`; every field must have its type (nothing is stringified)."""

    def bad(field: str, expected: str, value: object) -> ValueError:
        return ValueError(f"{where}: record {index}: {field}: expected {expected}, got "
                          f"{type(value).__name__} {value!r:.60}")  # fmt: skip

    if not isinstance(raw, Mapping):
        raise bad("record", "a JSON object", raw)
    missing = [f for f in _FIELDS if f not in raw]
    if missing or not isinstance(raw["translation"], Mapping) or "en" not in raw["translation"]:
        raise ValueError(f"{where}: record {index}: expected fields {list(_FIELDS)} and translation.en, "
                         f"got keys {sorted(raw)}"
                         + ("" if missing else f", translation {raw['translation']!r:.60}"))  # fmt: skip
    for field in ("id", "topic", "sentence_type", "chinese", "pinyin_numbered"):
        if not isinstance(raw[field], str):
            raise bad(field, "a str", raw[field])
    english = raw["translation"]["en"]
    if not isinstance(english, str):
        raise bad("translation.en", "a str", english)
    level = raw["hsk_level"]
    if not is_int(level) or not 1 <= level <= 6:
        raise bad("hsk_level", "an int in [1, 6]", level)
    tokens = raw["tokens"]
    if not isinstance(tokens, list):
        raise bad("tokens", "a list of {\"word\": str} objects", tokens)
    for position, token in enumerate(tokens):
        if not isinstance(token, Mapping) or not isinstance(token.get("word"), str):
            raise bad(f"tokens[{position}]", 'an object with a str "word"', token)
    return HskSentence(
        id=raw["id"], level=level, topic=raw["topic"], sentence_type=raw["sentence_type"], chinese=raw["chinese"],
        english=english.strip(), pinyin=tuple(raw["pinyin_numbered"].split()),
        words=tuple(t["word"] for t in tokens),
    )  # fmt: skip


def load_hsk(path: str | os.PathLike[str] | None = None) -> HskCorpus:
    """Read the HSK sentences, dropping placeholder translations and repeated Chinese sentences.

    Args:
        path: a JSON file holding a list of records in the ``hsk-sentences-audio`` format; ``None`` reads the
            copy inside the installed package (``hsk_sentences_audio/data/sentences.json``, cached).

    Returns:
        An :class:`HskCorpus`. Version 1.0.0: 4,354 records, 82 placeholders and 5 repeats dropped, 4,267 kept.

    Records whose English is empty or blank are dropped and counted with the placeholders (``placeholder_ids``).

    Raises:
        ValueError: if the file is not a JSON list, or a record (named by its index and field) is not an object,
            lacks a field, or has a field of another type: ``id``, ``topic``, ``sentence_type``, ``chinese``,
            ``pinyin_numbered`` and ``translation.en`` are str, ``translation`` an object, ``hsk_level`` an int in
            [1, 6], ``tokens`` a list of objects with a str ``word``.
        ModuleNotFoundError: if ``path`` is ``None`` and ``hsk-sentences-audio`` is not installed.
    """
    if path is None:
        return _load_packaged()
    with open(path, encoding="utf-8") as handle:
        return _corpus(json.load(handle), os.fspath(path), source=os.fspath(path))


@functools.lru_cache(maxsize=1)  # the result is immutable; parsing the 6 MB file takes about a second
def _load_packaged() -> HskCorpus:
    resource = resources.files("hsk_sentences_audio").joinpath("data", "sentences.json")
    with resource.open("r", encoding="utf-8") as handle:
        return _corpus(json.load(handle), "hsk_sentences_audio/data/sentences.json", source=SOURCE)


def _corpus(raw: object, where: str, source: str) -> HskCorpus:
    if not isinstance(raw, list):
        raise ValueError(f"{where}: expected a JSON list of sentence records, got {type(raw).__name__}")
    kept: list[HskSentence] = []
    placeholders: list[str] = []
    duplicates: list[str] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        sentence = _record(item, index, where)
        if not sentence.english or is_placeholder(sentence.english):  # no translation: nothing to learn
            placeholders.append(sentence.id)
        elif sentence.chinese in seen:  # a repeat would put one sentence in two splits
            duplicates.append(sentence.id)
        else:
            seen.add(sentence.chinese)
            kept.append(sentence)
    return HskCorpus(tuple(kept), tuple(placeholders), tuple(duplicates), source)


def split_hsk(
    sentences: Sequence[HskSentence], *, test_size: int = 400, validation_size: int = 400, seed: int = 0
) -> HskSplit:
    """A fixed, seeded split: shuffle the indices with ``random.Random(seed)``, take test, then validation.

    The same sentences and seed always give the same split (Python's ``random.shuffle`` is stable across
    versions); each part keeps corpus order. On :func:`load_hsk` of version 1.0.0 with the defaults: 3,467 train,
    400 validation, 400 test sentences.

    Raises:
        TypeError, ValueError: if a size or the seed is not a non-negative int, or test plus validation leave
            no training sentence.
    """
    test_size = check_int("test_size", test_size, 0)
    validation_size = check_int("validation_size", validation_size, 0)
    seed = check_int("seed", seed, 0)
    if test_size + validation_size >= len(sentences):
        raise ValueError(f"test_size + validation_size: expected < {len(sentences)} sentences, "
                         f"got {test_size} + {validation_size}")  # fmt: skip
    order = list(range(len(sentences)))
    random.Random(seed).shuffle(order)
    test = sorted(order[:test_size])
    validation = sorted(order[test_size : test_size + validation_size])
    train = sorted(order[test_size + validation_size :])
    pick = lambda idx: tuple(sentences[i] for i in idx)  # noqa: E731
    return HskSplit(pick(train), pick(validation), pick(test))


def char_readings(sentence: HskSentence) -> list[tuple[str, str]] | None:
    """The sentence's ``(character, syllable)`` pairs, or ``None`` when characters and syllables differ in count.

    ``"老师，您好！"`` → ``[("老", "lao3"), ("师", "shi1"), ("您", "nin2"), ("好", "hao3")]``: punctuation has no
    syllable and is left out.
    """
    chars = sentence.characters
    if len(chars) != len(sentence.pinyin):
        return None
    return list(zip(chars, sentence.pinyin, strict=True))


def count_misaligned(sentences: Iterable[HskSentence]) -> int:
    """How many sentences have a different number of Chinese characters and pinyin syllables (0 in 1.0.0)."""
    return sum(char_readings(s) is None for s in sentences)


def reading_counts(sentences: Iterable[HskSentence]) -> dict[str, Counter[str]]:
    """For every character, how often each reading occurs in ``sentences`` (misaligned sentences skipped)."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for sentence in sentences:
        for char, syllable in char_readings(sentence) or ():
            counts[char][syllable] += 1
    return dict(counts)


def most_frequent_readings(
    train: Iterable[HskSentence], sentences: Sequence[HskSentence]
) -> list[list[str | None]]:
    """The baseline reader: each character of ``sentences`` read as its most frequent reading in ``train``.

    Ties go to the alphabetically first syllable, so the result is fixed. A character never seen in ``train`` gets
    ``None`` (counted wrong by :func:`score_readings`).

    Returns:
        Per sentence, one reading per character of :attr:`HskSentence.characters`.
    """
    return readings_by_context(train, sentences, lambda s: s.characters)


def _most_frequent(found: Counter[str]) -> str:
    """The most frequent reading; ties go to the alphabetically first syllable."""
    return min(found, key=lambda r: (-found[r], r))


def readings_by_context(
    train: Iterable[HskSentence],
    sentences: Sequence[HskSentence],
    context: Callable[[HskSentence], Sequence[Hashable]],
) -> list[list[str | None]]:
    """A lookup reader: each character read as its most frequent reading in ``train`` under its context key.

    ``context(sentence)`` gives one hashable key per character of :attr:`HskSentence.characters`, e.g. the pair
    (previous character, character), or (word, position in the word) from the corpus's segmentation. A key never
    seen in ``train`` backs off to the character's most frequent reading alone; a character never seen gets
    ``None`` (counted wrong by :func:`score_readings`). Ties go to the alphabetically first syllable, so the
    result is fixed. With ``context=lambda s: s.characters`` this is :func:`most_frequent_readings`.

    Returns:
        Per sentence, one reading per character of :attr:`HskSentence.characters`.

    Raises:
        TypeError: if ``context`` is not callable.
        ValueError: if ``context`` returns a number of keys other than the sentence's number of characters.
    """
    if not callable(context):
        raise TypeError(f"context: expected a function of a sentence, got {type(context).__name__}")

    def keys(sentence: HskSentence) -> Sequence[Hashable]:
        found = context(sentence)
        if len(found) != len(sentence.characters):
            raise ValueError(f"context: expected one key per Chinese character ({len(sentence.characters)}) of "
                             f"{sentence.chinese!r}, got {len(found)}")  # fmt: skip
        return found

    train = list(train)  # read twice below
    by_key: dict[Hashable, Counter[str]] = defaultdict(Counter)
    for sentence in train:
        pairs = char_readings(sentence)
        if pairs is None:  # misaligned: skipped, as reading_counts does
            continue
        for key, (_, syllable) in zip(keys(sentence), pairs, strict=True):
            by_key[key][syllable] += 1
    best = {key: _most_frequent(found) for key, found in by_key.items()}
    alone = {c: _most_frequent(found) for c, found in reading_counts(train).items()}
    return [[best[key] if key in best else alone.get(c) for key, c in zip(keys(s), s.characters, strict=True)]
            for s in sentences]  # fmt: skip


@dataclass(frozen=True)
class ReadingScores:
    """Character-level reading accuracy (fractions in [0, 1]; NaN when a group is empty).

    Attributes:
        accuracy: over every character of the scored sentences.
        polyphone_accuracy: over characters with more than one reading in the training sentences.
        unseen_share: fraction of characters that never occur in the training sentences.
        unseen_accuracy: accuracy on those unseen characters.
        num_chars, num_polyphone_chars, num_unseen_chars: the group sizes (character occurrences).
    """

    accuracy: float
    polyphone_accuracy: float
    unseen_share: float
    unseen_accuracy: float
    num_chars: int
    num_polyphone_chars: int
    num_unseen_chars: int


def score_readings(
    predictions: Sequence[Sequence[str | None]],
    sentences: Sequence[HskSentence],
    train: Iterable[HskSentence],
) -> ReadingScores:
    """Score predicted readings against the corpus pinyin, overall, on polyphones and on unseen characters.

    Args:
        predictions: per sentence, one syllable (or ``None``) per character of :attr:`HskSentence.characters`.
        sentences: the scored sentences (aligned ones; see :func:`char_readings`).
        train: the training sentences, which decide what counts as a polyphone or as unseen.

    Raises:
        ValueError: if the counts differ, a sentence is misaligned, a prediction has the wrong length, or there
            are no characters to score.
    """
    if len(predictions) != len(sentences):
        raise ValueError(f"predictions: expected one per sentence ({len(sentences)}), got {len(predictions)}")
    counts = reading_counts(train)
    hits = {"all": [0, 0], "poly": [0, 0], "unseen": [0, 0]}  # group -> [right, total]
    for pred, sentence in zip(predictions, sentences, strict=True):
        pairs = char_readings(sentence)
        if pairs is None:
            raise ValueError(f"sentences: {sentence.id} has {len(sentence.characters)} characters but "
                             f"{len(sentence.pinyin)} syllables")  # fmt: skip
        if len(pred) != len(pairs):
            raise ValueError(
                f"predictions: expected {len(pairs)} readings for {sentence.id}, got {len(pred)}"
            )
        for (char, gold), guess in zip(pairs, pred, strict=True):
            groups = ["all"]
            if char not in counts:
                groups.append("unseen")
            elif len(counts[char]) > 1:
                groups.append("poly")
            for g in groups:
                hits[g][0] += guess == gold
                hits[g][1] += 1
    if hits["all"][1] == 0:
        raise ValueError("sentences: no Chinese characters to score")
    frac = lambda g: hits[g][0] / hits[g][1] if hits[g][1] else float("nan")  # noqa: E731
    return ReadingScores(
        accuracy=frac("all"), polyphone_accuracy=frac("poly"), unseen_share=hits["unseen"][1] / hits["all"][1],
        unseen_accuracy=frac("unseen"), num_chars=hits["all"][1], num_polyphone_chars=hits["poly"][1],
        num_unseen_chars=hits["unseen"][1],
    )  # fmt: skip
