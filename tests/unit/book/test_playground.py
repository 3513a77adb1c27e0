"""Chapter 10's "translate your own sentence": the reading, the attention map and the controls.

The map is checked against the model's own forward pass by hand (one layer, one head, and the mean), the
controls by changing their values as a reader's clicks would and reading what they show.
"""

from __future__ import annotations

import pytest
import torch

from tformer.book.playground import Reading, cross_attention_map, read_sentence, translator_controls
from tformer.book.shipped import ShippedTranslator, load_translator
from tformer.data.text import BOS_ID
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
