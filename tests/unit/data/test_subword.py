"""The sentencepiece BPE wrapper: trained offline, round-trips text, plugs into Vocab, deterministic."""

from __future__ import annotations

import pytest

from tformer.data.subword import SubwordTokenizer
from tformer.data.text import UNK_ID

SENTENCES = [
    "I am learning to write characters.",
    "She is reading a book in the library.",
    "We are writing letters to our teachers.",
    "The teacher reads the characters slowly.",
    "They learned to read before they could write.",
] * 4
CHINESE = ["我在学习写汉字。", "她在图书馆看书。", "老师慢慢地读汉字。", "我们给老师写信。"] * 4


@pytest.fixture(scope="module")
def english():
    return SubwordTokenizer.train(SENTENCES, vocab_size=60)


@pytest.mark.parametrize("text", [*SENTENCES[:5], "Teachers write, readers read."])
def test_round_trip(english, text):
    pieces = english.encode(text)
    assert english.decode(pieces) == text
    assert all(" " not in p for p in pieces)  # safe to join with spaces


def test_rare_words_split_into_known_pieces(english):
    pieces = english.encode("rewriting")
    assert len(pieces) > 1 and all(p in english.pieces for p in pieces)
    vocab = english.vocab()
    assert len(vocab) == len(english) + 4 and UNK_ID not in vocab.encode(pieces)
    assert len(english) <= 60


def test_chinese_round_trip_and_determinism():
    a, b = SubwordTokenizer.train(CHINESE, 40), SubwordTokenizer.train(CHINESE, 40)
    assert a.pieces == b.pieces and a.model_proto == b.model_proto
    for text in CHINESE[:4]:
        assert a.decode(a.encode(text)) == text
    assert SubwordTokenizer(a.model_proto).encode(CHINESE[0]) == a.encode(CHINESE[0])  # reloads


def test_errors(english):
    with pytest.raises(ValueError, match="sentences: expected at least one"):
        SubwordTokenizer.train(["", "  "], 10)
    with pytest.raises(ValueError, match="vocab_size: expected an int >= 2"):
        SubwordTokenizer.train(SENTENCES, 1)
    with pytest.raises(TypeError, match="text: expected a str"):
        english.encode(["I", "am"])


def test_arguments_are_checked_up_front() -> None:  # breaker 5 and MESSAGE
    with pytest.raises(TypeError, match=r"sentences: expected a list of sentences, got a str"):
        SubwordTokenizer.train("hello world", 10)
    with pytest.raises(TypeError, match=r"sentences: expected sentences that are str, got int 3"):
        SubwordTokenizer.train(["hello", 3], 10)
    with pytest.raises(ValueError, match=r"vocab_size: expected at least the corpus's distinct characters"):
        SubwordTokenizer.train(SENTENCES, 2)
    with pytest.raises(ValueError, match=r"character_coverage: expected a number in \[0.98, 1\], got 2.0"):
        SubwordTokenizer.train(SENTENCES, 60, character_coverage=2.0)
    with pytest.raises(TypeError, match=r"character_coverage: expected a number, got str"):
        SubwordTokenizer.train(SENTENCES, 60, character_coverage="x")
    with pytest.raises(ValueError, match=r"model_proto: expected a serialised sentencepiece model"):
        SubwordTokenizer(b"corrupt")
    with pytest.raises(TypeError, match=r"model_proto: expected bytes"):
        SubwordTokenizer("corrupt")


def test_unknown_pieces_are_copied_and_whitespace_is_normalised(english) -> None:  # breaker NIT
    assert english.decode(["zzz"]) == "zzz" and english.decode(["▁zzz"]) == "▁zzz"  # copied verbatim, as documented
    assert english.decode(["<unk>"]).strip() == "⁇"
    assert english.decode(english.encode(" I\tam\n")) == "I am"  # as the class docstring says
    with pytest.raises(TypeError, match=r"pieces: expected a list of pieces, got a str"):
        english.decode("▁I")


def test_empty_model_bytes_and_long_sentences_are_refused_and_nfkc_is_documented(english) -> None:
    with pytest.raises(ValueError, match="model_proto: expected a serialised sentencepiece model, got empty bytes"):
        SubwordTokenizer(b"")
    long = "ab " * 1400  # 4,200 bytes: sentencepiece would leave it out of training without a word
    with pytest.raises(ValueError, match=r"sentences\[1\]: expected at most 4192 bytes in UTF-8 .* got 4200; split it"):
        SubwordTokenizer.train(["ab cd", long], 16)
    assert english.decode(english.encode("Ｉ am １.")) == "I am 1."  # NFKC, as the class docstring says
    assert "NFKC" in (SubwordTokenizer.__doc__ or "")


def test_identity_normalization_keeps_full_width_punctuation() -> None:
    """The default NFKC turns the Chinese comma and question mark into ASCII; "identity" keeps them."""
    nfkc = SubwordTokenizer.train(CHINESE + ["你好，你呢？"] * 4, vocab_size=60)
    kept = SubwordTokenizer.train(CHINESE + ["你好，你呢？"] * 4, vocab_size=60, normalization="identity")
    assert nfkc.decode(nfkc.encode("你好，你呢？")) == "你好,你呢?"
    assert kept.decode(kept.encode("你好，你呢？")) == "你好，你呢？"
    assert "，" in kept.pieces and "，" not in nfkc.pieces
    with pytest.raises(ValueError, match=r"normalization: expected one of .*'identity'.*, got 'nfc'"):
        SubwordTokenizer.train(CHINESE, vocab_size=60, normalization="nfc")
