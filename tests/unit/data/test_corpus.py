"""The running-example corpus: determinism, size, the seeds' examples, translation rules, splits, bad input."""

from __future__ import annotations

import itertools
import random
import re

import pytest

from tformer.data.corpus import HELD_OUT_PAIRINGS, SEED_EXAMPLES, generate_corpus, generate_sentence


@pytest.fixture(scope="module")
def corpus():
    return generate_corpus(seed=0)


def _all_pairs(corpus):
    return [p for pairs in corpus.splits().values() for p in pairs]


def test_same_seed_is_byte_identical_and_other_seed_differs():
    a = generate_corpus(3_000, seed=7, validation_size=200, test_size=200, combinations_size=100)
    b = generate_corpus(3_000, seed=7, validation_size=200, test_size=200, combinations_size=100)
    c = generate_corpus(3_000, seed=8, validation_size=200, test_size=200, combinations_size=100)
    assert a.to_tsv().encode("utf-8") == b.to_tsv().encode("utf-8")
    assert a.to_tsv() != c.to_tsv()


def test_size_vocabulary_and_lengths(corpus):
    pairs = _all_pairs(corpus)
    english = [en for en, _ in pairs]
    assert len(set(english)) == len(english) >= 20_000
    en_types = {w for en, _ in pairs for w in en.split()}
    zh_types = {w for _, zh in pairs for w in zh.split()}
    assert 50 <= len(en_types) <= 150
    assert 50 <= len(zh_types) <= 150
    lengths = [len(en.split()) for en in english]
    assert min(lengths) == 3
    assert max(lengths) >= 35
    # every length bucket used in the book's plots is populated
    assert sum(n > 30 for n in lengths) >= 500
    assert sum(20 < n <= 30 for n in lengths) >= 3_000


def test_split_sizes_and_disjointness(corpus):
    assert (len(corpus.validation), len(corpus.test), len(corpus.test_combinations)) == (1_000, 2_000, 1_000)
    train = {en for en, _ in corpus.train}
    for name in ("validation", "test", "test_combinations"):
        other = {en for en, _ in getattr(corpus, name)}
        assert not train & other, name
    assert not {en for en, _ in corpus.test} & {en for en, _ in corpus.validation}


def test_seed_examples_are_in_test_exactly(corpus):
    test = dict(corpus.test)
    # written from the seed articles, not from the generator
    assert test["the cat sat on the mat"] == "猫 坐 在 垫子 上"
    assert test["the cat chases the mouse"] == "猫 追 老鼠"
    assert test["the cat chases the mouse because it is hungry"] == "猫 追 老鼠 ， 因为 它 饿 了"
    for en, zh in SEED_EXAMPLES:
        assert test[en] == zh


def _held_out_in(en: str) -> bool:
    words = en.split()
    bigrams = set(itertools.pairwise(words))
    forms = {
        "chase": ("chase", "chases", "chased", "chasing"),
        "eat": ("eat", "eats", "ate", "eating"),
        "bite": ("bite", "bites", "bit", "biting"),
    }
    for a, b in HELD_OUT_PAIRINGS:
        if (a, b) in bigrams:
            return True
        if a in forms and re.search(rf"\b({'|'.join(forms[a])}) the (\w+ )?{b}\b", en):
            return True
    return False


def test_held_out_combinations_never_in_train(corpus):
    train_words = {w for en, _ in corpus.train for w in en.split()}
    for a, b in HELD_OUT_PAIRINGS:  # each word alone is seen in training
        assert a in train_words or a in {"chase", "eat", "bite"}
        assert b in train_words
    assert not any(_held_out_in(en) for en, _ in corpus.train + corpus.validation)
    # most combination sentences show the pairing on the surface (the rest via "it")
    shown = sum(_held_out_in(en) for en, _ in corpus.test_combinations)
    assert shown >= 0.8 * len(corpus.test_combinations)


# Translation rules from the module docstring, written as independent templates (not with the generator's code).
ANIMAL = {
    "cat": "猫", "dog": "狗", "mouse": "老鼠", "bird": "鸟", "rabbit": "兔子", "horse": "马", "duck": "鸭子",
    "monkey": "猴子", "tiger": "老虎", "pig": "猪", "cow": "牛", "fox": "狐狸", "frog": "青蛙",
}  # fmt: skip
PLACE_POST = {"on": "上", "in": "里", "under": "下", "near": "旁边", "behind": "后面"}
PLACE = {"mat": "垫子", "table": "桌子", "garden": "花园", "box": "盒子", "bed": "床"}
RULES = [
    # (English regex, Chinese template from the match groups)
    (r"the (\w+) chases the (\w+)", lambda m: f"{ANIMAL[m[1]]} 追 {ANIMAL[m[2]]}"),
    (r"the (\w+) chased the (\w+)", lambda m: f"{ANIMAL[m[1]]} 追 了 {ANIMAL[m[2]]}"),
    (r"the (\w+) is chasing the (\w+)", lambda m: f"{ANIMAL[m[1]]} 在 追 {ANIMAL[m[2]]}"),
    (
        r"the (\w+) sleeps (\w+) the (\w+)",
        lambda m: f"{ANIMAL[m[1]]} 在 {PLACE[m[3]]} {PLACE_POST[m[2]]} 睡觉",
    ),
    (
        r"the (\w+) is sleeping (\w+) the (\w+)",
        lambda m: f"{ANIMAL[m[1]]} 正在 {PLACE[m[3]]} {PLACE_POST[m[2]]} 睡觉",
    ),
    (r"the (\w+) sat (\w+) the (\w+)", lambda m: f"{ANIMAL[m[1]]} 坐 在 {PLACE[m[3]]} {PLACE_POST[m[2]]}"),
    (r"the (\w+) (?:is|was) hungry", lambda m: f"{ANIMAL[m[1]]} 饿 了"),
    (r"the black (\w+) sleeps", lambda m: f"黑色 的 {ANIMAL[m[1]]} 睡觉"),
    (
        r"the (\w+) and the (\w+) chase the (\w+)",
        lambda m: f"{ANIMAL[m[1]]} 和 {ANIMAL[m[2]]} 追 {ANIMAL[m[3]]}",
    ),
]


@pytest.mark.parametrize(("pattern", "template"), RULES)
def test_translation_rules(corpus, pattern, template):
    matched = 0
    for en, zh in _all_pairs(corpus):
        m = re.fullmatch(pattern, en)
        if m and all(g in ANIMAL or g in PLACE or g in PLACE_POST for g in m.groups()):
            assert zh == template(m), en
            matched += 1
    assert matched >= 1, pattern


def test_pronouns_and_conjunctions_align(corpus):
    for en, zh in _all_pairs(corpus):
        words, tokens = en.split(), zh.split()
        assert words.count("it") == tokens.count("它"), en
        assert words.count("because") == tokens.count("因为"), en
        conjunctions = sum(words.count(c) for c in ("because", "but", "so")) + words.count("and")
        assert tokens.count("，") + tokens.count("和") == conjunctions, en
        assert "it" != words[0]  # "it" always has an earlier referent


def test_chinese_words_are_single_tokens(corpus):
    zh_types = {w for _, zh in _all_pairs(corpus) for w in zh.split()}
    assert {"垫子", "老鼠", "它", "，"} <= zh_types
    assert "垫" not in zh_types


def test_generate_sentence_and_bad_input():
    en, zh, pairings = generate_sentence(random.Random(0), 3)
    assert en.count(" ") >= 5 and zh
    assert all(isinstance(p, tuple) and len(p) == 2 for p in pairings)
    with pytest.raises(ValueError, match="num_clauses"):
        generate_sentence(random.Random(0), 0)
    with pytest.raises(ValueError, match=r"num_pairs: expected more than validation_size \+ test_size = 100 \(a non-empty train split\), got 100"):
        generate_corpus(100, validation_size=50, test_size=50)
    with pytest.raises(ValueError, match="validation_size"):
        generate_corpus(100, validation_size=-1)
    with pytest.raises(ValueError, match="clause_weights"):
        generate_corpus(100, validation_size=10, test_size=10, clause_weights=())
