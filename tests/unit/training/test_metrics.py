"""Metrics: exact match, token accuracy, BLEU (sacrebleu, zh), length buckets, LM losses, translation reports."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from tformer.baselines.seq2seq_rnn import Seq2SeqRNN
from tformer.data.text import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocab
from tformer.models import Transformer
from tformer.training.metrics import (
    accuracy_by_length,
    accuracy_over,
    bigram_nats_per_token,
    corpus_bleu,
    evaluate_translation,
    exact_match,
    length_bucket_label,
    lm_nats_per_token,
    token_accuracy,
    translate,
)

TINY = dict(d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, d_ff=32, dropout=0.0, max_len=8)


def test_exact_match():
    preds = ["猫 坐 在 垫子 上", ["猫", "追", "老鼠"], "猫 追"]
    refs = ["猫 坐 在 垫子 上", "猫 追 老鼠", "猫 追 老鼠"]
    assert exact_match(preds, refs) == pytest.approx(2 / 3, abs=1e-12)
    with pytest.raises(ValueError, match="same count"):
        exact_match(preds, refs[:2])
    with pytest.raises(ValueError, match="at least one"):
        exact_match([], [])


def test_token_accuracy_ignores_padding():
    targets = torch.tensor([[5, 6, 7, PAD_ID], [5, 9, PAD_ID, PAD_ID]])
    preds = torch.tensor([[5, 6, 8, 4], [5, 9, 4, 4]])
    assert token_accuracy(preds, targets) == pytest.approx(4 / 5, abs=1e-12)
    logits = nn.functional.one_hot(preds, 10).float()  # (B, L, V), argmax = preds
    assert token_accuracy(logits, targets) == pytest.approx(4 / 5, abs=1e-12)
    with pytest.raises(ValueError, match=r"targets: expected at least one position that is not pad_id=0, got none"):
        token_accuracy(preds, torch.zeros_like(targets))
    with pytest.raises(ValueError, match="expected"):
        token_accuracy(preds[:, :2], targets)


def test_bleu_by_hand():
    assert corpus_bleu(["猫 坐 在 垫子 上"], ["猫 坐 在 垫子 上"]) == pytest.approx(100.0, abs=1e-9)
    assert corpus_bleu(["狗 跑"], ["猫 坐 在 垫子 上"]) == pytest.approx(0.0, abs=1e-9)
    # zh tokenisation splits characters: hypothesis 猫坐在垫子 = 5 tokens, reference 6; all n-gram precisions are
    # 1, so BLEU = brevity penalty = exp(1 - 6/5)
    assert corpus_bleu(["猫 坐 在 垫子"], ["猫 坐 在 垫子 上"]) == pytest.approx(
        100 * math.exp(-0.2), abs=1e-9
    )
    # with whitespace tokens (垫子 one token): 4 vs 5 tokens
    got = corpus_bleu(["猫 坐 在 垫子"], ["猫 坐 在 垫子 上"], tokenize="none")
    assert got == pytest.approx(100 * math.exp(-0.25), abs=1e-9)


def test_length_buckets():
    assert [length_bucket_label(n) for n in (1, 10, 11, 20, 21, 30, 31, 99)] == [
        "1-10", "1-10", "11-20", "11-20", "21-30", "21-30", "31+", "31+",
    ]  # fmt: skip
    rows = accuracy_by_length([3, 5, 12, 25, 25, 40], [True, False, True, True, False, True])
    assert [(r.label, r.count) for r in rows] == [("1-10", 2), ("11-20", 1), ("21-30", 2), ("31+", 1)]
    assert [r.accuracy for r in rows] == [0.5, 1.0, 0.5, 1.0]
    rows = accuracy_by_length([3], torch.tensor([True]), edges=(5,))
    assert rows[0].accuracy == 1.0 and rows[1].count == 0 and math.isnan(rows[1].accuracy)
    assert accuracy_over([3, 25, 25, 40], [True, True, False, False], 20) == pytest.approx(1 / 3, abs=1e-12)
    with pytest.raises(ValueError, match="length"):
        length_bucket_label(-1)
    with pytest.raises(ValueError, match="edges"):
        length_bucket_label(3, (10, 5))


def test_bigram_baseline_by_hand():
    train = torch.tensor([0, 1, 0, 1, 1])  # pairs 01, 10, 01, 11: from 0 -> 1 twice; from 1 -> 0 once, 1 once
    valid = torch.tensor([0, 1, 1])  # pairs 01, 11
    k, V = 0.5, 2
    p01 = (2 + k) / (2 + k * V)
    p11 = (1 + k) / (2 + k * V)
    expected = -(math.log(p01) + math.log(p11)) / 2
    assert bigram_nats_per_token(train, valid, V, k=k) == pytest.approx(expected, abs=1e-12)
    with pytest.raises(ValueError, match="k"):
        bigram_nats_per_token(train, valid, V, k=0)


def test_bigram_refuses_ids_outside_the_vocabulary() -> None:  # breaker 11: -1 used to wrap to the last row
    with pytest.raises(ValueError, match=r"valid_ids: expected ids in \[0, V=3\), got min -1, max 0"):
        bigram_nats_per_token(torch.tensor([0, 1, 2]), torch.tensor([0, -1]), 3)
    with pytest.raises(ValueError, match=r"train_ids: expected ids in \[0, V=3\), got min 0, max 5"):
        bigram_nats_per_token(torch.tensor([0, 5, 2]), torch.tensor([0, 1]), 3)


def test_corpus_bleu_names_an_unknown_tokenizer() -> None:
    with pytest.raises(ValueError, match=r"tokenize: expected one of .*'zh'.*, got 'foo'"):
        corpus_bleu(["猫"], ["猫"], tokenize="foo")


class _Uniform(nn.Module):
    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, x):
        return self.bias.expand(*x.shape, -1)


def test_lm_nats_of_a_uniform_model_is_log_v():
    ids = torch.arange(1_000) % 7
    assert lm_nats_per_token(_Uniform(7), ids, block_size=16) == pytest.approx(math.log(7), abs=1e-6)
    with pytest.raises(ValueError, match="block_size"):
        lm_nats_per_token(_Uniform(7), ids[:10], block_size=16)


def test_translate_and_report_api_and_errors():
    torch.manual_seed(0)
    src_vocab, tgt_vocab = Vocab(["the", "cat", "sat"]), Vocab(["猫", "坐"])
    model = Transformer(len(src_vocab), len(tgt_vocab), **TINY)
    out = translate(model, ["the cat sat", "cat"], src_vocab, tgt_vocab, max_len=5)
    assert len(out) == 2 and all(set(o.split()) <= {"猫", "坐", "<unk>"} for o in out)
    report = evaluate_translation(model, [("the cat sat", "猫 坐"), ("cat", "猫")], src_vocab, tgt_vocab)
    assert report.hypotheses[0] == translate(model, ["the cat sat"], src_vocab, tgt_vocab)[0]
    assert report.exact_match == sum(report.correct) / 2
    assert sum(b.count for b in report.buckets) == 2
    with pytest.raises(ValueError, match="unknown token 'dog'"):
        translate(model, ["the dog"], src_vocab, tgt_vocab, strict=True)
    with pytest.raises(ValueError, match="unknown token 'dog'"):
        evaluate_translation(model, [("the dog", "狗")], src_vocab, tgt_vocab, strict=True)
    with pytest.raises(ValueError, match="mismatched vocabulary"):
        translate(model, ["the cat"], Vocab(["the", "cat"]), tgt_vocab)
    with pytest.raises(ValueError, match="at least one"):
        evaluate_translation(model, [], src_vocab, tgt_vocab)


def test_unseen_source_words_are_read_as_unk_and_counted():
    torch.manual_seed(0)
    src_vocab, tgt_vocab = Vocab(["the", "cat", "sat"]), Vocab(["猫", "坐"])
    model = Transformer(len(src_vocab), len(tgt_vocab), d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, d_ff=32, dropout=0.0, max_len=16).eval()
    src = torch.tensor([[src_vocab.stoi["the"], UNK_ID, EOS_ID]])  # (1, S): "dog" fed as <unk>
    by_hand = " ".join(tgt_vocab.decode(model.greedy_decode(src, 8, BOS_ID, EOS_ID)[0]))
    assert translate(model, ["the dog"], src_vocab, tgt_vocab, max_len=8) == [by_hand]
    report = evaluate_translation(model, [("the dog", "猫"), ("the cat sat", "猫 坐")], src_vocab, tgt_vocab)
    assert report.unknown_words == 1
    assert report.hypotheses == translate(model, ["the <unk>", "the cat sat"], src_vocab, tgt_vocab)
    known = evaluate_translation(model, [("the cat", "猫")], src_vocab, tgt_vocab)
    assert known.unknown_words == 0


@pytest.mark.parametrize("attention", [None, "bahdanau"])
def test_translate_scores_rnn_translators_with_the_same_code(attention):
    torch.manual_seed(0)
    src_vocab, tgt_vocab = Vocab(["the", "cat", "sat", "on", "mat"]), Vocab(["猫", "坐", "在", "垫子", "上"])
    rnn = Seq2SeqRNN(len(src_vocab), len(tgt_vocab), emb_dim=8, hidden_size=16, attention=attention)
    sentences = ["the cat sat on the mat", "cat", "the mat", "sat on the cat"]
    batched = translate(rnn, sentences, src_vocab, tgt_vocab, batch_size=3, max_len=9)
    rnn.eval()
    for sentence, got in zip(sentences, batched, strict=True):  # each alone, by hand
        src = torch.tensor([src_vocab.encode(sentence.split(), add_eos=True)])  # (1, S)
        alone = rnn.greedy_decode(src, 9, BOS_ID, EOS_ID)[0]  # (≤ 9,)
        assert got == " ".join(tgt_vocab.decode(alone))
    report = evaluate_translation(rnn, [(s, s) for s in sentences], src_vocab, tgt_vocab)
    assert report.hypotheses == translate(rnn, sentences, src_vocab, tgt_vocab)
    with pytest.raises(ValueError, match="mismatched vocabulary"):
        translate(rnn, ["the cat"], Vocab(["the", "cat"]), tgt_vocab)
    with pytest.raises(TypeError, match="model: expected a translator with a greedy_decode method, got Linear"):
        translate(nn.Linear(2, 2), ["the cat"], src_vocab, tgt_vocab)


def test_empty_sources_are_scored_in_a_bucket_of_their_own() -> None:  # breaker 2: used to raise after decoding
    torch.manual_seed(0)
    src_vocab, tgt_vocab = Vocab(["the", "cat"]), Vocab(["猫"])
    model = Transformer(len(src_vocab), len(tgt_vocab), **TINY)
    report = evaluate_translation(model, [("", "猫"), ("the cat", "猫"), ("   ", "猫")], src_vocab, tgt_vocab)
    assert len(report.hypotheses) == 3
    assert report.hypotheses[0] == report.hypotheses[2] == ""  # nothing to translate: not a sentence the model invents
    assert translate(model, ["", " "], src_vocab, tgt_vocab) == ["", ""]
    assert [(b.label, b.low, b.high, b.count) for b in report.buckets[:2]] == [("0", 0, 0, 2), ("1-10", 1, 10, 1)]
    no_eos = evaluate_translation(model, [("", "猫"), ("the cat", "猫")], src_vocab, tgt_vocab, src_eos=False)
    assert no_eos.hypotheses[0] == "" and no_eos.buckets[0].count == 1
    assert length_bucket_label(0) == "0"
    assert [r.label for r in accuracy_by_length([3], [True])] == ["1-10", "11-20", "21-30", "31+"]  # no "0" row


def test_long_sources_are_truncated_and_counted_not_refused() -> None:  # breaker 3
    torch.manual_seed(0)
    src_vocab, tgt_vocab = Vocab(["the", "cat", "sat"]), Vocab(["猫", "坐"])
    model = Transformer(len(src_vocab), len(tgt_vocab), **TINY)  # learned positions, max_len=8
    long = "the cat sat " * 3  # 9 words + EOS > 8
    report = evaluate_translation(model, [(long, "猫"), ("cat", "猫")], src_vocab, tgt_vocab)
    assert report.truncated_sources == 1
    assert report.hypotheses[0] == translate(model, [" ".join(long.split()[:7])], src_vocab, tgt_vocab)[0]
    rope = Transformer(len(src_vocab), len(tgt_vocab), **{**TINY, "positional": "rope"})
    report = evaluate_translation(rope, [(long, "猫")], src_vocab, tgt_vocab)
    assert report.truncated_sources == 0


def test_translate_refuses_a_str_and_restores_train_mode_on_error() -> None:  # breaker 5 and NIT
    src_vocab, tgt_vocab = Vocab(["the", "cat"]), Vocab(["猫"])
    model = Transformer(len(src_vocab), len(tgt_vocab), **TINY).train()
    with pytest.raises(TypeError, match="sentences: expected a list of sentences, got a str"):
        translate(model, "the cat", src_vocab, tgt_vocab)
    with pytest.raises(ValueError, match="max_len"):
        translate(model, ["the cat"], src_vocab, tgt_vocab, max_len=0)
    assert model.training


def test_bigram_refuses_mask_dtypes_and_an_infinite_k() -> None:
    ids = torch.tensor([0, 1, 2, 1])
    with pytest.raises(TypeError, match=r"train_ids: expected dtype torch.int64 or torch.int32, got torch.uint8"):
        bigram_nats_per_token(ids.to(torch.uint8), ids, 3)  # uint8 indexes as a boolean mask
    with pytest.raises(TypeError, match=r"valid_ids: expected an integer tensor \(N,\), got torch.bool"):
        bigram_nats_per_token(ids, ids.bool(), 3)
    with pytest.raises(ValueError, match=r"k: expected a number in \(0, inf\), got inf"):
        bigram_nats_per_token(ids, ids, 3, k=math.inf)
    assert bigram_nats_per_token(ids.int(), ids[:3].int(), 3) == pytest.approx(bigram_nats_per_token(ids, ids[:3], 3))


def test_a_bare_str_is_not_a_list_of_sentences() -> None:
    with pytest.raises(TypeError, match=r"predictions: expected a sequence of sentences, got str 'abc'"):
        exact_match("abc", ["a", "b", "c"])
    with pytest.raises(TypeError, match=r"references: expected a sequence of sentences, got str"):
        exact_match(["a", "b", "c"], "abc")
    with pytest.raises(TypeError, match=r"hypotheses: expected a sequence of sentences, got str"):
        corpus_bleu("我 爱 你", ["我", "爱", "你"])
    with pytest.raises(TypeError, match=r"correct: expected a sequence of values, got str"):
        accuracy_by_length([1, 2, 3], "TFT")
    with pytest.raises(ValueError, match=r"edges: expected strictly increasing positive integers, got \(5.5,\)"):
        accuracy_by_length([1, 7], [True, False], edges=[5.5])
    assert [b.count for b in accuracy_by_length([1, 7], [True, False], edges=[5])] == [1, 1]


def test_lm_nats_per_token_restores_train_mode_when_the_model_raises() -> None:
    class Failing(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Linear(2, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise ValueError("tokens: expected ids in [0, V)")

    model = Failing().train()
    with pytest.raises(ValueError, match="tokens"):
        lm_nats_per_token(model, torch.arange(10), 4)
    assert model.training  # used to be left in eval mode


def test_translate_and_evaluate_name_a_junk_row_and_a_bad_argument() -> None:
    torch.manual_seed(0)
    src_vocab, tgt_vocab = Vocab(["the", "cat", "sat"]), Vocab(["猫", "坐"])
    model = Transformer(len(src_vocab), len(tgt_vocab), **TINY)
    with pytest.raises(TypeError, match=r"sentences\[1\]: expected a str \(space-separated words\), got NoneType"):
        translate(model, ["the cat", None], src_vocab, tgt_vocab)  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"sentences: expected a list of str sentences, got Tensor"):
        translate(model, torch.tensor([[1, 2]]), src_vocab, tgt_vocab)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"strict: expected a bool, got str"):
        translate(model, ["the cat"], src_vocab, tgt_vocab, strict="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"pairs\[1\]: expected a \(source, reference\) pair of str, got \('cat', None\)"):
        evaluate_translation(model, [("the cat", "猫"), ("cat", None)], src_vocab, tgt_vocab)  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"pairs\[0\]: expected a \(source, reference\) pair of str, got \(None, '猫'\)"):
        evaluate_translation(model, [(None, "猫")], src_vocab, tgt_vocab)  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"pairs: expected a list of \(source, reference\) str pairs, got NoneType"):
        evaluate_translation(model, None, src_vocab, tgt_vocab)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"strict: expected a bool, got str"):
        evaluate_translation(model, [("cat", "猫")], src_vocab, tgt_vocab, strict="yes")  # type: ignore[arg-type]
    assert evaluate_translation(model, [("", "猫")], src_vocab, tgt_vocab).buckets[0].label == "0"  # junk text: scored
