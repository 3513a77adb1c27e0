"""The shipped Tang poems and the three measures chapter 17 reads on written poems, checked by hand."""

from __future__ import annotations

import pytest

from tformer.data.poems import COUPLET, couplet_form_share, distinct_ngrams, load_tang_poems, repeat_rate


def test_the_corpus_is_what_its_docstring_says() -> None:
    text = load_tang_poems()
    train, valid = text.train.splitlines(), text.validation.splitlines()
    assert (len(train), len(valid)) == (10_313, 1_145)
    assert (len(text.train), len(text.validation)) == (446_105, 49_457)
    assert not set(train) & set(valid)  # split by poem, each text once
    assert {len(p) for p in train + valid} == {24, 48}  # quatrains and eight-line regulated verse
    assert couplet_form_share(text.train) == couplet_form_share(text.validation) == 1.0
    chars = set(text.train + text.validation) - {"，", "。", "\n"}
    assert len(chars) == 2999  # of the 3,000 most common characters, one occurs only in poems that were left out
    assert set(text.validation) <= set(text.train)  # no validation character is new to the model
    assert len(text.char_vocab()) == 4 + 2999 + 3  # the specials, the characters, ，。 and the newline


def test_every_tenth_poem_validates() -> None:
    whole = load_tang_poems(validation_every=2)
    assert len(whole.train.splitlines()) == 5_729 and len(whole.validation.splitlines()) == 5_729
    with pytest.raises(ValueError, match="validation_every"):
        load_tang_poems(validation_every=1)


@pytest.mark.parametrize(("text", "share"), [
    ("白日依山盡，黃河入海流。", 1.0),
    ("白日依山盡，黃河入海流。欲窮千里目更上一層樓。", 0.5),  # the second couplet lost its comma
    ("白日依山盡，黃河入海流。\n欲窮千里，更上一層樓。", 0.5),  # four characters
    ("白日依山盡，黃河入海流", 0.0),  # no full stop: no couplet ended
    ("", 0.0),
])
def test_couplet_form_share_by_hand(text: str, share: float) -> None:
    assert couplet_form_share(text) == share


def test_the_couplet_pattern_takes_letters_only() -> None:
    assert COUPLET.fullmatch("白日依山盡，黃河入海流。")
    assert not COUPLET.fullmatch("白日依山1，黃河入海流。") and not COUPLET.fullmatch("白日 山盡，黃河入海流。")


def test_repeat_rate_by_hand() -> None:
    assert repeat_rate(["白白日，"]) == pytest.approx(1 / 3)  # the second 白; punctuation is not counted
    assert repeat_rate(["白日", "白日"]) == 0.0  # repeats count within a poem only
    assert repeat_rate(["山山山山"]) == pytest.approx(3 / 4)
    assert repeat_rate([]) == repeat_rate(["，。"]) == 0.0


def test_distinct_ngrams_by_hand() -> None:
    assert distinct_ngrams(["白日白日"]) == pytest.approx(2 / 3)  # 白日 日白 白日
    assert distinct_ngrams(["白日，依山"], 2) == 1.0  # 白日 依山: no pair across the comma
    assert distinct_ngrams(["白日", "白日"], 1) == pytest.approx(2 / 4)
    assert distinct_ngrams(["白"], 2) == 0.0


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: couplet_form_share(["白日"]), TypeError, "text: expected a str"),
    (lambda: repeat_rate("白日依山盡"), TypeError, "poems: expected a list of poems, got a str"),
    (lambda: distinct_ngrams([1]), TypeError, "poems: expected poems that are str"),
    (lambda: distinct_ngrams(["白日"], 0), ValueError, "n: expected"),
])
def test_bad_input_is_refused_by_name(call, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        call()
