"""Chapter 10's "translate your own sentence": the reading, the attention map and the controls.

The map is checked against the model's own forward pass by hand (one layer, one head, and the mean), the
controls by changing their values as a reader's clicks would and reading what they show.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tformer.book.playground import (
    Reading,
    continue_poem,
    cross_attention_map,
    poem_controls,
    read_sentence,
    translator_controls,
)
from tformer.book.shipped import POET_PROMPT, ShippedPoet, ShippedTranslator, load_poet, load_translator
from tformer.data.poems import couplet_form_share
from tformer.data.text import BOS_ID, UNK_ID
from tformer.training.metrics import translate
from tformer.training.teacher_forcing import shift_right


@pytest.fixture(scope="module")
def shipped() -> ShippedTranslator:
    return load_translator()


def test_the_running_example_is_read_and_translated(shipped: ShippedTranslator) -> None:
    reading = read_sentence(shipped, "The cat sat on the MAT")
    assert reading == Reading(("the", "cat", "sat", "on", "the", "mat"), ("the", "cat", "sat", "on", "the", "mat"),
                              (), ("猫", "坐", "在", "垫子", "上"))


def test_unseen_words_are_read_as_unk_and_counted(shipped: ShippedTranslator) -> None:
    reading = read_sentence(shipped, "the cat chased the dragon and the phoenix")
    assert reading.unknown == ("dragon", "phoenix")
    assert reading.seen == ("the", "cat", "chased", "the", "<unk>", "and", "the", "<unk>")
    assert list(reading.written) == translate(shipped.model, [" ".join(reading.words)], shipped.src_vocab,
                                              shipped.tgt_vocab)[0].split()


@pytest.mark.parametrize(("sentence", "error"), [("", ValueError), ("   ", ValueError), (None, TypeError),
                                                  (["the", "cat"], TypeError)])
def test_a_sentence_without_words_is_refused(shipped: ShippedTranslator, sentence: object, error: type) -> None:
    with pytest.raises(error, match=r"^sentence: expected"):
        read_sentence(shipped, sentence)  # type: ignore[arg-type]


def test_the_map_is_the_models_own_cross_attention(shipped: ShippedTranslator) -> None:
    reading = read_sentence(shipped, "the small dog sat on the red sofa")
    src = torch.tensor([shipped.src_vocab.encode(list(reading.words), add_eos=True)])
    tgt = torch.tensor([shipped.tgt_vocab.encode(list(reading.written), add_eos=True)])
    with torch.no_grad():
        maps = shipped.model(src, shift_right(tgt, BOS_ID), return_attention=True).cross_attention
    L, S = len(reading.written) + 1, len(reading.words) + 1
    # fed its own translation, the model writes it again: the map is the attention it used while writing
    assert torch.equal(maps_logits_argmax(shipped, src, tgt), tgt[0])
    mean_last = cross_attention_map(shipped, reading)
    assert mean_last.shape == (L, S)
    torch.testing.assert_close(mean_last, maps[-1][0].mean(dim=0), rtol=0, atol=1e-6)
    torch.testing.assert_close(cross_attention_map(shipped, reading, layer=0, head=2), maps[0][0, 2], rtol=0, atol=0)
    torch.testing.assert_close(mean_last.sum(dim=-1), torch.ones(L), rtol=0, atol=1e-5)
    # different layers look at different places: the picker is not decorative
    assert not torch.allclose(cross_attention_map(shipped, reading, layer=0), mean_last)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"layer": 2}, ValueError, r"^layer: expected an int in \[-2, 1\], got 2"),
    ({"layer": 1.0}, TypeError, "^layer: expected an int"),
    ({"head": 4}, ValueError, r"^head: expected an int in \[0, 3\], got 4"),
    ({"head": True}, TypeError, "^head: expected an int"),
])
def test_a_layer_or_head_out_of_range_is_refused(shipped: ShippedTranslator, kwargs: dict, error: type,
                                                  match: str) -> None:
    reading = read_sentence(shipped, "the cat sat on the mat")
    with pytest.raises(error, match=match):
        cross_attention_map(shipped, reading, **kwargs)


def test_the_controls_follow_the_reader(shipped: ShippedTranslator) -> None:
    pytest.importorskip("ipywidgets")
    box = translator_controls(shipped, "the cat sat on the mat")
    text, pickers, report, _ = box.children
    layer, head = pickers.children
    assert "猫 坐 在 垫子 上" in report.value and box.report is report
    assert [value for _, value in layer.options] == [0, 1] and layer.value == 1
    assert [label for label, _ in head.options] == ["mean of heads", "1", "2", "3", "4"]
    assert head.label == "mean of heads"
    text.value = "the cat chased the dragon"  # as if typed
    assert "1 unknown: dragon" in report.value and "&lt;unk&gt;" in report.value
    text.value = "   "
    assert "sentence: expected at least one word" in report.value
    text.value = "the dog sat on the sofa"
    assert "unknown: none" in report.value
    reading = read_sentence(shipped, "the dog sat on the sofa")
    layer.value, head.index = 0, 3  # as a click sets them: the picker's index
    weights, title = box.drawn
    assert head.label == "3" and title == "cross-attention, decoder layer 1 (head 3)"
    torch.testing.assert_close(weights, cross_attention_map(shipped, reading, layer=0, head=2), rtol=0, atol=0)
    head.index = 0  # back to the mean: the box shows its label, not an empty selection
    assert head.label == "mean of heads" and box.drawn[1] == "cross-attention, decoder layer 1 (mean of heads)"
    torch.testing.assert_close(box.drawn[0], cross_attention_map(shipped, reading, layer=0), rtol=0, atol=0)


def test_the_controls_refuse_a_bad_first_sentence(shipped: ShippedTranslator) -> None:
    pytest.importorskip("ipywidgets")
    with pytest.raises(ValueError, match=r"^sentence: expected at least one word"):
        translator_controls(shipped, "")


def maps_logits_argmax(shipped: ShippedTranslator, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """The tokens the model predicts at each position when fed ``tgt`` shifted right (teacher forcing)."""
    with torch.no_grad():
        return shipped.model(src, shift_right(tgt, BOS_ID))[0].argmax(dim=-1)  # logits (1, L, V) -> (L,)


# --------------------------------------------------------------------------- chapter 17's poet
@pytest.fixture(scope="module")
def poet() -> ShippedPoet:
    return load_poet()


def test_a_poem_continues_its_opening_and_repeats_its_record(poet: ShippedPoet) -> None:
    greedy = continue_poem(poet, POET_PROMPT)
    assert greedy.text == poet.record["greedy"] and greedy.text.startswith(POET_PROMPT) and greedy.finished
    assert continue_poem(poet, POET_PROMPT, temperature=0.8, top_p=0.9, seed=0).text == poet.record["sampled"]
    assert couplet_form_share(greedy.text) == 1.0  # the shipped poet writes the form when it is sure
    # the seed decides the draws: the same seed writes the same poem, others mostly differ
    sampled = {continue_poem(poet, "", temperature=1.0, seed=s).text for s in range(6)}
    assert continue_poem(poet, "", temperature=1.0, seed=3).text in sampled and len(sampled) >= 5
    # a NumPy seed (a reader's np.arange, say) writes the same poem as the Python int
    assert continue_poem(poet, "", temperature=1.0, seed=np.int64(3)).text == continue_poem(
        poet, "", temperature=1.0, seed=3).text


def test_an_unseen_character_is_read_as_unk_and_counted(poet: ShippedPoet) -> None:
    assert "猫" not in poet.vocab and "鼠" in poet.vocab  # the poems write 貓, traditionally
    poem = continue_poem(poet, "猫追老鼠", temperature=0.8, top_p=0.9, seed=1)
    assert poem.unknown == ("猫",) and poem.text.startswith("猫追老鼠")
    ids = torch.tensor([poet.vocab.encode(["\n", *"猫追老鼠"])])
    assert ids[0, 1].item() == UNK_ID  # what the model read


@pytest.mark.parametrize(("prompt", "error", "words"), [(None, TypeError, "prompt: expected"),
                                                         ("白日\n黃河", ValueError, "prompt: expected one line"),
                                                         ("白" * 63, ValueError, "shorter than 63")],
                         ids=["not a str", "two lines", "too long"])
def test_a_bad_opening_is_refused_by_name(poet: ShippedPoet, prompt: object, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        continue_poem(poet, prompt)  # type: ignore[arg-type]


def test_the_longest_opening_leaves_one_character_to_write(poet: ShippedPoet) -> None:
    poem = continue_poem(poet, "白" * 62)
    assert len(poem.text) <= 63


def test_the_poem_controls_follow_their_values(poet: ShippedPoet) -> None:
    pytest.importorskip("ipywidgets")
    box = poem_controls(poet, POET_PROMPT)
    text, temperature, top_k, top_p, seed = box.children[:5]
    greedy_like = box.report.value
    assert "couplets in form" in greedy_like
    temperature.value = 0.0  # greedy: the record's poem
    assert poet.record["greedy"].replace("。", "。<br>") in box.report.value
    temperature.value, top_p.value = 1.5, 1.0
    wild = box.report.value
    seed.value = 7
    assert box.report.value != wild  # a new seed, a new poem
    top_k.value = 5
    assert box.report.value != wild
    text.value = "明月"
    assert "明月" in box.report.value
    text.value = "白日\n"  # ipywidgets' Text keeps no newline, but a value set by code can hold one
    assert "prompt: expected one line" in box.report.value


def test_a_sentence_longer_than_the_model_reads_is_cut_and_counted(shipped: ShippedTranslator) -> None:
    readable = shipped.model.max_len - 1
    reading = read_sentence(shipped, " ".join(["the cat sat on the mat"] * 30))  # 180 words
    assert len(reading.words) == readable and reading.dropped == 180 - readable
    weights = cross_attention_map(shipped, reading)
    assert weights.shape[1] == readable + 1  # the map covers what the model read, end-of-sentence included
    assert torch.allclose(weights.sum(dim=-1), torch.ones(weights.shape[0]), atol=1e-5)


def test_no_end_of_sentence_row_when_decoding_hit_its_cap(shipped: ShippedTranslator) -> None:
    reading = read_sentence(shipped, "the cat sat on the mat")
    assert reading.finished and cross_attention_map(shipped, reading).shape == (len(reading.written) + 1, 7)
    assert reading.row_labels[-1] == "writes <eos>" and reading.column_labels[-1] == "<eos>"
    capped = Reading(reading.words, reading.seen, (), reading.written, finished=False)
    assert cross_attention_map(shipped, capped).shape == (len(capped.row_labels), len(capped.column_labels))
    assert capped.row_labels == [f"writes {w}" for w in reading.written]  # no row claims an <eos> never written


@pytest.mark.parametrize("sentence", ["fat", "and", "the cat sat on the mat", "cat " * 20])
def test_finished_says_whether_greedy_decoding_wrote_end_of_sentence(shipped: ShippedTranslator, sentence: str) -> None:
    from tformer.data.text import EOS_ID

    reading = read_sentence(shipped, sentence)
    src = torch.tensor([shipped.src_vocab.encode(list(reading.words), add_eos=True)])
    cap = min(2 * src.shape[1] + 10, shipped.model.max_len)  # translate's own cap
    out = shipped.model.greedy_decode(src, cap, BOS_ID, EOS_ID)
    assert reading.finished == bool((out == EOS_ID).any())


def test_a_translation_that_fills_the_model_still_gets_its_map(shipped: ShippedTranslator) -> None:
    reading = read_sentence(shipped, "cat " * 70)  # long enough for greedy decoding to reach the model's limit
    weights = cross_attention_map(shipped, reading)
    assert weights.shape == (len(reading.row_labels), len(reading.column_labels))
    box = translator_controls(shipped, "cat " * 70)
    assert box.drawn[0].shape == weights.shape  # the controls drew this sentence, not a stale one


def test_the_poem_report_escapes_html(poet: ShippedPoet) -> None:
    pytest.importorskip("ipywidgets")
    box = poem_controls(poet, "<b>粗</b>")
    assert "&lt;b&gt;粗&lt;/b&gt;" in box.report.value and "<b>粗" not in box.report.value


def test_special_tokens_are_never_written(poet: ShippedPoet) -> None:
    for seed in range(30):  # a temperature this high makes every token, the never-trained specials too, likely
        poem = continue_poem(poet, "白日", temperature=50.0, seed=seed)
        assert "<" not in poem.text and len(poem.text) <= poet.model.max_len - 1, poem.text


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda p: continue_poem(None, "白日"), TypeError, "poet: expected ShippedPoet"),  # type: ignore[arg-type]
    (lambda p: continue_poem(p.model, "白日"), TypeError, "poet: expected ShippedPoet"),  # type: ignore[arg-type]
    (lambda p: continue_poem(p, "白日", seed=2**64), ValueError, "seed: expected"),
    (lambda p: read_sentence(p, "the cat"), TypeError, "translator: expected ShippedTranslator"),  # type: ignore[arg-type]
], ids=["None", "a bare model", "seed too large", "a poet as translator"])
def test_wrong_objects_are_refused_by_name(poet: ShippedPoet, call, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        call(poet)
