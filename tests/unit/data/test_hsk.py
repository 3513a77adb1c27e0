"""The HSK corpus: loader (placeholders and repeats dropped), fixed split, character–pinyin alignment, baseline."""

from __future__ import annotations

import json
import math
import re

import pytest

from tformer.data.hsk import (
    HskSentence,
    char_readings,
    count_misaligned,
    is_placeholder,
    load_hsk,
    most_frequent_readings,
    reading_counts,
    readings_by_context,
    score_readings,
    split_hsk,
)


def _raw(id_: str, chinese: str, english: str, pinyin: str, words: list[str]) -> dict:
    return {"id": id_, "hsk_level": 1, "topic": "misc", "sentence_type": "statement", "chinese": chinese,
            "translation": {"en": english}, "pinyin_numbered": pinyin, "tokens": [{"word": w} for w in words]}  # fmt: skip


def _sentence(chinese: str, pinyin: str) -> HskSentence:
    return HskSentence("x", 1, "misc", "statement", chinese, "-", tuple(pinyin.split()), (chinese,))


@pytest.fixture
def tiny_file(tmp_path):
    records = [
        _raw("a", "我来了。", "I have come.", "wo3 lai2 le5", ["我", "来", "了"]),
        _raw("b", "树在风中摆动。", "placeholder-p1", "shu4 zai4 feng1 zhong1 bai3 dong4", ["树", "在"]),
        _raw("c", "好了！", "All right!", "hao3 le5", ["好", "了"]),
        _raw("d", "我来了。", "Here I am.", "wo3 lai2 le5", ["我", "来", "了"]),  # repeats "a"
    ]
    path = tmp_path / "sentences.json"
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    return path


def test_loader_drops_and_counts_a_placeholder_and_a_repeat(tiny_file):
    corpus = load_hsk(tiny_file)
    assert [s.id for s in corpus.sentences] == ["a", "c"]
    assert corpus.placeholder_ids == ("b",) and corpus.duplicate_ids == ("d",)
    first = corpus.sentences[0]
    assert first.english == "I have come." and first.pinyin == ("wo3", "lai2", "le5")
    assert first.characters == ("我", "来", "了") and first.words == ("我", "来", "了")
    with pytest.raises(AttributeError):
        first.english = "changed"  # frozen


def test_loader_rejects_malformed_files(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"id": "a"}), encoding="utf-8")
    with pytest.raises(ValueError, match="expected a JSON list"):
        load_hsk(path)
    path.write_text(json.dumps([{"id": "a", "chinese": "我"}]), encoding="utf-8")
    with pytest.raises(ValueError, match="record 0: expected fields"):
        load_hsk(path)


def _with(field: str, value: object) -> dict:
    record = _raw("a", "你好", "Hello", "ni3 hao3", ["你好"])
    if field == "en":
        record["translation"]["en"] = value
    else:
        record[field] = value
    return record


@pytest.mark.parametrize(("record", "message"), [
    (5, "record 1: record: expected a JSON object, got int 5"),
    (None, "record 1: record: expected a JSON object, got NoneType"),
    (_with("pinyin_numbered", ["ni3", "hao3"]), "record 1: pinyin_numbered: expected a str, got list"),
    (_with("en", None), "record 1: translation.en: expected a str, got NoneType"),
    (_with("chinese", None), "record 1: chinese: expected a str, got NoneType"),
    (_with("hsk_level", 3.7), "record 1: hsk_level: expected an int in [1, 6], got float 3.7"),
    (_with("hsk_level", True), "record 1: hsk_level: expected an int in [1, 6], got bool"),
    (_with("hsk_level", 99), "record 1: hsk_level: expected an int in [1, 6], got int 99"),
    (_with("hsk_level", "three"), "record 1: hsk_level: expected an int in [1, 6], got str"),
    (_with("translation", None), "record 1: expected fields"),
    (_with("translation", "Hello"), "record 1: expected fields"),
    (_with("tokens", ["你好"]), "record 1: tokens[0]: expected an object with a str \"word\", got str"),
    (_with("tokens", [{"text": "你好"}]), "record 1: tokens[0]: expected an object with a str \"word\""),
    (_with("tokens", "你好"), "record 1: tokens: expected a list"),
])
def test_loader_names_the_record_and_field_of_a_wrong_type(tmp_path, record: object, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([_raw("ok", "我", "I", "wo3", ["我"]), record], ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(message)):
        load_hsk(path)


def test_loader_drops_and_counts_an_empty_translation(tmp_path) -> None:
    records = [_raw("a", "我", "I", "wo3", ["我"]), _raw("b", "你", "", "ni3", ["你"]), _raw("c", "他", "  ", "ta1", ["他"])]
    path = tmp_path / "sentences.json"
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    corpus = load_hsk(path)
    assert [s.id for s in corpus.sentences] == ["a"] and corpus.placeholder_ids == ("b", "c")


@pytest.mark.parametrize(
    "text", ["placeholder", "placeholder-p1", "placeholder-p14", "placeholder-q1", "PH", " PH "]
)
def test_placeholders_are_recognised(text):
    assert is_placeholder(text)


@pytest.mark.parametrize("text", ["Help!", "Photos", "PHP is a language.", "The placeholder is here."])
def test_translations_are_not_placeholders(text):
    assert not is_placeholder(text)


def test_char_readings_align_and_skip_punctuation():
    assert char_readings(_sentence("老师，您好！", "lao3 shi1 nin2 hao3")) == [
        ("老", "lao3"), ("师", "shi1"), ("您", "nin2"), ("好", "hao3"),
    ]  # fmt: skip
    broken = _sentence("您好！", "nin2")
    assert char_readings(broken) is None
    assert count_misaligned([broken, _sentence("好", "hao3")]) == 1


def test_baseline_and_scores_by_hand():
    train = [_sentence("了了", "le5 le5"), _sentence("了解", "liao3 jie3"), _sentence("好", "hao3")]
    assert reading_counts(train)["了"] == {"le5": 2, "liao3": 1}
    test = [_sentence("好了", "hao3 le5"), _sentence("了解猫", "liao3 jie3 mao1")]
    guesses = most_frequent_readings(train, test)
    assert guesses == [["hao3", "le5"], ["le5", "jie3", None]]
    scores = score_readings(guesses, test, train)
    # 5 characters, 3 right; polyphone 了 twice, once right; 猫 unseen
    assert (scores.num_chars, scores.num_polyphone_chars, scores.num_unseen_chars) == (5, 2, 1)
    assert scores.accuracy == pytest.approx(3 / 5, abs=1e-12)
    assert scores.polyphone_accuracy == pytest.approx(1 / 2, abs=1e-12)
    assert scores.unseen_share == pytest.approx(1 / 5, abs=1e-12) and scores.unseen_accuracy == 0.0
    perfect = score_readings([["hao3", "le5"], ["liao3", "jie3", "mao1"]], test, train)
    assert perfect.accuracy == perfect.polyphone_accuracy == perfect.unseen_accuracy == 1.0
    assert math.isnan(score_readings([["hao3"]], [_sentence("好", "hao3")], train).polyphone_accuracy)
    with pytest.raises(ValueError, match="expected 2 readings"):
        score_readings([["hao3"], ["liao3", "jie3", "mao1"]], test, train)
    with pytest.raises(ValueError, match="one per sentence"):
        score_readings(guesses[:1], test, train)


def test_split_is_fixed_and_validated():
    sentences = [_sentence("好" * (i + 1), " ".join(["hao3"] * (i + 1))) for i in range(10)]
    a, b = (
        split_hsk(sentences, test_size=3, validation_size=2),
        split_hsk(sentences, test_size=3, validation_size=2),
    )
    assert a == b and (len(a.train), len(a.validation), len(a.test)) == (5, 2, 3)
    assert sorted(a.train + a.validation + a.test, key=lambda s: len(s.chinese)) == sentences  # a partition
    assert split_hsk(sentences, test_size=3, validation_size=2, seed=1) != a
    with pytest.raises(ValueError, match="test_size \\+ validation_size"):
        split_hsk(sentences, test_size=5, validation_size=5)
    with pytest.raises(TypeError, match="seed: expected an int"):
        split_hsk(sentences, seed=1.0)


# ----------------------------------------------------------------------------------------------- the real corpus
@pytest.fixture(scope="module")
def real():
    corpus = load_hsk()
    return corpus, split_hsk(corpus.sentences)


def test_real_corpus_counts_and_alignment(real):
    corpus, _ = real
    assert len(corpus.placeholder_ids) == 82 and len(corpus.duplicate_ids) == 5
    assert len(corpus.sentences) == 4_354 - 82 - 5
    assert not any(is_placeholder(s.english) for s in corpus.sentences)
    assert count_misaligned(corpus.sentences) == 0
    assert all("".join(s.words) == "".join(s.characters) for s in corpus.sentences)
    assert "CC-BY-SA-4.0" in corpus.source


def test_real_split_sizes_and_first_test_sentence(real):
    _, split = real
    assert (len(split.train), len(split.validation), len(split.test)) == (3_467, 400, 400)
    first = split.test[0]
    assert (first.id, first.chinese, first.english) == ("hsk1-0004", "对不起。没关系。", "Sorry. It's okay.")
    assert first.pinyin == ("dui4", "bu5", "qi3", "mei2", "guan1", "xi5")
    train_text = {s.chinese for s in split.train}
    assert not train_text & {s.chinese for s in split.test + split.validation}  # no sentence in two parts


def test_real_most_frequent_reading_baseline(real):
    _, split = real
    scores = score_readings(most_frequent_readings(split.train, split.test), split.test, split.train)
    assert (scores.num_chars, scores.num_polyphone_chars, scores.num_unseen_chars) == (2_982, 936, 36)
    assert scores.accuracy == pytest.approx(2_840 / 2_982, abs=1e-12)  # 95.2%
    assert scores.polyphone_accuracy == pytest.approx(835 / 936, abs=1e-12)  # 89.2%
    assert scores.unseen_share == pytest.approx(36 / 2_982, abs=1e-12)  # 1.2%


def test_readings_by_context_keys_back_off_and_ties():
    train = [_sentence("到了", "dao4 liao3"), _sentence("好了", "hao3 le5"), _sentence("好了", "hao3 le5"),
             _sentence("行", "xing2"), _sentence("行", "hang2")]  # fmt: skip

    def previous(sentence):
        text = " " + "".join(sentence.characters)
        return list(zip(text, sentence.characters, strict=False))

    test = [_sentence("到了", "dao4 liao3"), _sentence("吃了", "chi1 le5"), _sentence("行猫", "xing2 mao1")]
    # (到, 了) was seen with liao3; (吃, 了) was not, so 了 backs off to its most frequent reading, le5; 行 is a
    # tie (hang2 once, xing2 once) that goes to the alphabetically first syllable; 吃 and 猫 were never seen.
    assert readings_by_context(train, test, previous) == [["dao4", "liao3"], [None, "le5"], ["hang2", None]]
    # keyed by the character itself it is the most-frequent-reading baseline
    assert readings_by_context(train, test, lambda s: s.characters) == most_frequent_readings(train, test)
    assert most_frequent_readings(train, test)[0] == ["dao4", "le5"]


def test_readings_by_context_rejects_bad_context():
    train = [_sentence("好了", "hao3 le5")]
    with pytest.raises(ValueError, match="context: expected one key per Chinese character"):
        readings_by_context(train, train, lambda s: ["only one"])
    with pytest.raises(TypeError, match="context"):
        readings_by_context(train, train, "previous")
