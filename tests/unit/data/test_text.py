"""Tokenisers, Vocab, the real English text, and batching."""

from __future__ import annotations

import pytest
import torch

from tformer.data.text import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    SPECIAL_TOKENS,
    UNK_ID,
    PairBatches,
    Vocab,
    WindowBatches,
    _clean_paragraph,
    bucket_batches,
    char_tokenize,
    load_english_text,
    pad_sequences,
    word_tokenize,
)


def test_special_ids_are_fixed():
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    v = Vocab(["猫", "坐"])
    assert [v.itos[i] for i in range(4)] == list(SPECIAL_TOKENS) == ["<pad>", "<bos>", "<eos>", "<unk>"]
    assert v.stoi["猫"] == 4 and v.stoi["坐"] == 5 and len(v) == 6


def test_build_orders_by_frequency_then_code_point():
    v = Vocab.build([["b", "a", "c", "a"], ["c", "a", "d"]])
    # counts a:3, c:2, b:1, d:1 -> a, c, then b before d
    assert v.to_list() == ["a", "c", "b", "d"]
    assert Vocab.build([["x", "y"], ["y"]], min_freq=2).to_list() == ["y"]


def test_encode_decode_round_trip():
    sentence = "猫 坐 在 垫子 上"
    tokens = word_tokenize(sentence)
    assert tokens == ["猫", "坐", "在", "垫子", "上"]
    v = Vocab.build([tokens])
    ids = v.encode(tokens, add_bos=True, add_eos=True, strict=True)
    assert ids[0] == BOS_ID and ids[-1] == EOS_ID and len(ids) == 7
    assert v.decode(ids) == tokens
    assert v.decode(torch.tensor([*ids, PAD_ID, PAD_ID])) == tokens
    assert v.decode([*ids[:-1], PAD_ID], skip_special=False) == ["<bos>", *tokens, "<pad>"]
    assert v.decode([v.stoi["猫"], EOS_ID, v.stoi["坐"]]) == ["猫"]
    assert v.decode([v.stoi["猫"], EOS_ID, v.stoi["坐"]], stop_at_eos=False) == ["猫", "坐"]
    chars = char_tokenize("a cat\n")
    assert chars == ["a", " ", "c", "a", "t", "\n"] and "".join(chars) == "a cat\n"
    assert Vocab(v.to_list()) == v


def test_unknown_tokens():
    v = Vocab(["cat", "mat"])
    assert v.encode(["the", "cat"]) == [UNK_ID, 4]
    assert v.decode([UNK_ID, 4]) == ["<unk>", "cat"]
    with pytest.raises(ValueError, match="unknown token 'the'"):
        v.encode(["the", "cat"], strict=True)


def test_bad_input_raises_clear_errors():
    v = Vocab(["cat", "mat"])
    with pytest.raises(ValueError, match=r"ids: expected ids in \[0, V=6\), got 6"):
        v.decode([4, 6])
    with pytest.raises(ValueError, match=r"ids: expected ids in \[0, V=6\), got -1"):
        v.decode([-1])
    with pytest.raises(ValueError, match=r"tokens: expected at most max_len=3 ids, got 4"):
        v.encode(["cat", "mat", "cat"], add_bos=True, max_len=3)
    with pytest.raises(TypeError, match="got a str"):
        v.encode("cat mat")
    with pytest.raises(ValueError, match=r"sequences: expected a token that occurs at least min_freq=1 times, got none"):
        Vocab.build([])
    with pytest.raises(ValueError, match="duplicates"):
        Vocab(["cat", "cat"])
    with pytest.raises(ValueError, match=r"tokens: expected no special tokens \(they are added at ids 0-3\), got \['<pad>'\]"):
        Vocab(["<pad>"])
    with pytest.raises(ValueError, match=r"src: expected ids in \[0, V=6\), got min 4, max 9"):
        v.check_ids(torch.tensor([[4, 9]]), "src")
    v.check_ids(torch.tensor([[4, 5]]))  # in range: no error


@pytest.fixture(scope="module")
def english():
    return load_english_text()


def test_english_text_is_clean_prose_and_deterministic(english):
    assert len(english.train) > 150_000 and len(english.validation) > 15_000
    assert english.train.isascii() and english.validation.isascii()
    for para in english.train.splitlines()[:500]:
        assert not para.startswith(" ") and ">>>" not in para and "::=" not in para
    # mostly letters and spaces, i.e. prose
    letters = sum(c.isalpha() or c == " " for c in english.train)
    assert letters > 0.9 * len(english.train)
    assert "statement" in english.train and " the " in english.validation
    train_paras, valid_paras = set(english.train.splitlines()), set(english.validation.splitlines())
    assert len(valid_paras) > 0.05 * len(train_paras)
    vocab = english.char_vocab()
    assert vocab == Vocab.build([char_tokenize(english.train)])
    assert vocab.itos[4] == " " and vocab.itos[5] == "e"  # the two most frequent characters of English prose
    assert 60 <= len(vocab) <= 110
    sample = char_tokenize(english.train[:2_000])
    assert vocab.decode(vocab.encode(sample, strict=True)) == sample


def test_clean_paragraph_keeps_prose_and_drops_code():
    prose = "The \u201cif\u201d statement is used for *conditional* execution:\nit selects exactly one suite."
    assert (
        _clean_paragraph(prose)
        == 'The "if" statement is used for conditional execution: it selects exactly one suite.'
    )
    assert _clean_paragraph('   if_stmt ::= "if" assignment_expression ":" suite') is None
    assert _clean_paragraph(">>> r = range(0, 20, 2) >>> r range(0, 20, 2) >>> 11 in r False") is None
    assert _clean_paragraph("Assertions") is None  # a heading, too short


def test_pad_sequences():
    out = pad_sequences([[5, 6, 7], [8]])
    torch.testing.assert_close(out, torch.tensor([[5, 6, 7], [8, PAD_ID, PAD_ID]]))
    assert out.dtype == torch.long
    with pytest.raises(ValueError, match="at least one"):
        pad_sequences([])
    with pytest.raises(ValueError, match=r"sequences: expected lengths of at most max_len=2, got 3"):
        pad_sequences([[5, 6, 7]], max_len=2)


def test_bucket_batches_cover_once_and_group_lengths():
    lengths = [(i * 37) % 50 + 1 for i in range(1_000)]
    batches = bucket_batches(lengths, 32, seed=0)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(1_000))
    spread = sum(max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in batches) / len(batches)
    assert spread < 5  # random batches of 32 from 1..50 would spread ~45
    assert batches == bucket_batches(lengths, 32, seed=0)
    assert batches != bucket_batches(lengths, 32, seed=1)
    ordered = bucket_batches(lengths, 32, shuffle=False)
    flat_sorted = [lengths[i] for b in ordered for i in b]
    assert flat_sorted == sorted(lengths)
    with pytest.raises(ValueError, match=r"lengths: expected at least one example to batch, got none"):
        bucket_batches([], 4)
    with pytest.raises(ValueError, match="batch_size"):
        bucket_batches([1], 0)


def test_pair_batches():
    src = [[4 + i % 3] * (1 + i % 7) for i in range(50)]
    tgt = [[5] * (1 + i % 5) for i in range(50)]
    batches = PairBatches(src, tgt, 8, seed=0)
    assert len(batches) == 7
    epoch1, epoch2 = list(batches), list(batches)
    for s, t in epoch1:
        assert s.shape[0] == t.shape[0] <= 8
        assert ((t == EOS_ID).sum(dim=1) == 1).all()  # every target ends with one EOS
        assert ((s == EOS_ID).sum(dim=1) == 1).all()  # sources end in EOS too (src_eos=True)
    assert sum(int((s != PAD_ID).sum()) for s, _ in epoch1) == sum(map(len, src)) + 50
    assert [s.tolist() for s, _ in epoch1] != [s.tolist() for s, _ in epoch2]  # reshuffled per epoch
    assert batches.num_tokens == sum(map(len, src)) + sum(map(len, tgt)) + 100
    plain = list(PairBatches(src, tgt, 8, src_eos=False, add_eos=False, shuffle=False))
    assert sum(int((s != PAD_ID).sum()) for s, _ in plain) == sum(map(len, src))
    assert sum(int((t == EOS_ID).sum()) for _, t in plain) == 0
    bucketed = list(PairBatches(src, tgt, 8, pool=50))  # one pool: every batch a narrow length range
    mixed = list(PairBatches(src, tgt, 8, pool=1))
    assert sum(s.numel() for s, _ in bucketed) < sum(s.numel() for s, _ in mixed)  # less padding
    with pytest.raises(ValueError, match=r"src: expected at least one sequence to batch, got none"):
        PairBatches([], [], 4)
    with pytest.raises(ValueError, match="same number"):
        PairBatches([[4]], [[4], [5]], 4)
    with pytest.raises(ValueError, match="empty sequence"):
        PairBatches([[4], []], [[4], [5]], 4)
    with pytest.raises(ValueError, match="pool"):
        PairBatches([[4]], [[4]], 4, pool=0)


def test_window_batches_targets_are_next_tokens():
    ids = torch.arange(100) % 17 + 4
    windows = WindowBatches(ids, block_size=9, batch_size=4, num_batches=3, seed=0)
    got = list(windows)
    assert len(got) == 3
    for x, y in got:
        assert x.shape == y.shape == (4, 9)
        torch.testing.assert_close(x[:, 1:], y[:, :-1])
        for row in x:  # each row is a real window of the stream
            assert any(torch.equal(ids[s : s + 9], row) for s in range(0, 91))
    with pytest.raises(ValueError, match="longer than block_size"):
        WindowBatches(ids[:5], block_size=9, batch_size=4, num_batches=3)


def test_a_str_is_refused_where_token_lists_belong() -> None:  # breaker 5: used to count characters
    with pytest.raises(TypeError, match=r"sequences: expected token lists, got a str item"):
        Vocab.build(["the cat sat"])
    with pytest.raises(TypeError, match=r"sequences: expected token lists, got a str"):
        Vocab.build("the cat sat")
    with pytest.raises(TypeError, match=r"tokens: expected a list of tokens, got a str"):
        Vocab("cat")
    assert Vocab.build(t.split() for t in ["the cat", "the mat"]).to_list() == ["the", "cat", "mat"]  # generators


def test_special_token_spellings_in_text_are_unknown_words() -> None:  # breaker 6
    v = Vocab(["a"])
    assert v.encode(["a", "<pad>", "<eos>", "<bos>", "<unk>"]) == [4, UNK_ID, UNK_ID, UNK_ID, UNK_ID]
    assert v.encode(["a"], add_bos=True, add_eos=True) == [BOS_ID, 4, EOS_ID]
    with pytest.raises(ValueError, match="unknown token '<pad>'"):
        v.encode(["a", "<pad>"], strict=True)
    assert "<eos>" not in v and "a" in v


def test_vocab_refuses_non_str_tokens_and_non_int_ids() -> None:  # breaker NITs and MESSAGE
    with pytest.raises(TypeError, match=r"sequences: expected tokens that are str, got NoneType None"):
        Vocab.build([["a", None]])
    with pytest.raises(TypeError, match=r"tokens: expected tokens that are str, got int 1"):
        Vocab([1, 2])
    with pytest.raises(ValueError, match=r"tokens: expected non-empty strings, got ''"):
        Vocab([""])
    v = Vocab(["a"])
    for bad in ([4.0], ["4"], [True]):
        with pytest.raises(TypeError, match=r"ids: expected ints, got"):
            v.decode(bad)
    with pytest.raises(TypeError, match=r"ids: expected ints or a 1-D integer tensor, got a str"):
        v.decode("4")
    with pytest.raises(TypeError, match=r"tokens: expected a list of tokens \(str\), got a Tensor"):
        v.encode(torch.tensor([4, 5]))
    with pytest.raises(ValueError, match=r"pool: expected a positive int, got 0"):
        bucket_batches([3, 1, 2], 2, pool=0)
