"""Chapter 12's fine-tuning study (``tformer.book.topics``) and the grid it ships
(``benchmarks/finetune_hsk_topics.py`` -> ``tformer/book/benchmarks/hsk_finetune.json``)."""

from __future__ import annotations

import dataclasses
from importlib import resources

import numpy as np
import pytest
import torch

from tformer.book.topics import (
    BATCH,
    FINETUNE_STEPS,
    FRACTIONS,
    LR,
    WEIGHT_DECAY,
    TopicData,
    fine_tune,
    fine_tune_model,
    load_finetune_record,
    topic_accuracy,
    topic_correct,
    topic_data,
)
from tformer.models import EncoderOnlyTransformer


@pytest.fixture(scope="module")
def record() -> dict:
    return load_finetune_record()


@pytest.fixture(scope="module")
def data() -> TopicData:
    return topic_data()


def test_the_record_holds_the_settings_the_module_runs(record: dict, data: TopicData) -> None:
    assert (record["steps"], record["batch"], record["lr"], record["weight_decay"]) == (FINETUNE_STEPS, BATCH, LR,
                                                                                      WEIGHT_DECAY)  # fmt: skip
    assert record["fractions"] == [str(f) for f in FRACTIONS] and record["seeds"] == [0, 1, 2]
    shipped = resources.files("tformer.book.checkpoints") / "hsk_mlm_seed0.pt"
    assert record["config"] == torch.load(shipped, weights_only=True)["extra"]["config"]
    assert (record["test_sentences"], record["train_sentences"]) == (len(data.x_test), len(data.x_train))


def test_every_accuracy_counts_whole_test_sentences(record: dict) -> None:
    n = record["test_sentences"]
    for arm in ("pre-trained", "scratch"):
        for fraction in record["fractions"]:
            runs = record["accuracy"][arm][fraction]
            assert len(runs) == 3
            for acc in runs:
                assert 0 <= acc <= 100 and abs(acc * n / 100 - round(acc * n / 100)) < 1e-3, acc


def test_the_stored_right_answers_give_the_stored_accuracies(record: dict) -> None:
    n = record["test_sentences"]
    for arm in ("pre-trained", "scratch"):
        for fraction in record["fractions"]:
            for acc, right in zip(record["accuracy"][arm][fraction], record["correct"][arm][fraction], strict=True):
                assert len(right) == n and set(right) <= {"0", "1"}
                assert acc == 100 * right.count("1") / n


def test_topic_correct_is_what_fine_tune_scores(record: dict, data: TopicData) -> None:
    model = fine_tune_model(None, record["config"], data, 0.05, seed=4, steps=2)
    right = topic_correct(model, data)
    assert right.dtype == torch.bool and right.shape == (len(data.x_test),) and not model.training
    assert fine_tune(None, record["config"], data, 0.05, seed=4, steps=2) == 100 * int(right.sum()) / len(right)
    with pytest.raises(TypeError, match=r"^model: expected EncoderOnlyTransformer, got str$"):
        topic_correct("bert", data)  # type: ignore[arg-type]


def test_the_record_shows_what_the_chapter_says(record: dict) -> None:
    acc = record["accuracy"]
    gain = {f: [p - s for p, s in zip(acc["pre-trained"][f], acc["scratch"][f], strict=True)] for f in acc["scratch"]}
    assert min(gain["0.2"]) > 0 and max(gain["1.0"]) < 0  # ahead on every seed with a fifth, behind with all


def test_topic_data_is_the_shipped_encoders_vocabulary(data: TopicData) -> None:
    assert data.mask_id == 4 and data.vocab.itos[4] == "<mask>"
    assert len(data.topics) == 19 and data.y_train.dtype == torch.int64 and int(data.y_train.max()) == 18
    assert len(data.unlabelled) == len(data.x_train) + 400  # training and validation sentences, no test sentence


def test_a_run_again_gives_the_stored_accuracy(record: dict, data: TopicData) -> None:
    torch.set_num_threads(1)  # as the grid ran
    acc = fine_tune(None, record["config"], data, 0.05, seed=0)
    assert abs(acc - record["accuracy"]["scratch"]["0.05"][0]) <= 100 / len(data.x_test) + 1e-9


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"fraction": 0.0}, ValueError, r"^fraction: expected a number in \(0, 1\], got 0.0$"),
        ({"fraction": 1.5}, ValueError, r"^fraction: expected a number in \(0, 1\], got 1.5$"),
        ({"start": "bert"}, TypeError, r"^start: expected an EncoderOnlyTransformer or None, got str$"),
        ({"data": [[5, 6]]}, TypeError, r"^data: expected TopicData, got list$"),
        ({"config": None}, TypeError, r"^config: expected a dict of EncoderOnlyTransformer arguments, got NoneType$"),
        ({"fraction": 1e-4}, ValueError, r"^fraction: expected a share that labels at least one of the 3467 training "),
        ({"steps": 0}, ValueError, r"^steps: expected a positive int, got 0$"),
        ({"device": "tpu"}, ValueError, r"^device: expected a torch device"),
    ],
)
def test_fine_tune_names_a_bad_argument(data: TopicData, record: dict, kwargs: dict, error: type,
                                        message: str) -> None:  # fmt: skip
    arguments = {"start": None, "config": record["config"], "data": data, "fraction": 0.2, "seed": 0, **kwargs}
    with pytest.raises(error, match=message):
        fine_tune(**arguments)


def test_fine_tune_starts_both_arms_from_the_same_weights(record: dict, data: TopicData) -> None:
    torch.manual_seed(3)
    same = EncoderOnlyTransformer(**record["config"])  # the weights the control of seed 3 starts from
    torch.manual_seed(4)
    other = EncoderOnlyTransformer(**record["config"])
    control = fine_tune(None, record["config"], data, 0.05, seed=3, steps=2)
    assert fine_tune(same, record["config"], data, 0.05, seed=3, steps=2) == control
    assert fine_tune(other, record["config"], data, 0.05, seed=3, steps=2) != control  # so the check can fail


def test_fine_tune_refuses_a_start_built_from_another_config(record: dict, data: TopicData) -> None:
    wider = EncoderOnlyTransformer(**{**record["config"], "num_classes": 3})  # a head of 3 topics, not 19
    with pytest.raises(ValueError, match=r"^start: expected an encoder built from config, got one built as "):
        fine_tune(wider, record["config"], data, 0.05, seed=0, steps=1)


def test_fine_tune_takes_numpy_numbers(record: dict, data: TopicData) -> None:
    plain = fine_tune(None, record["config"], data, 0.05, seed=1, steps=2)
    assert fine_tune(None, record["config"], data, np.float64(0.05), seed=np.int64(1), steps=np.int32(2)) == plain


@pytest.mark.parametrize("change", [{"num_classes": 5}, {"pad_id": 1}])
def test_fine_tune_refuses_a_config_that_does_not_fit_the_data(record: dict, data: TopicData, change: dict) -> None:
    with pytest.raises(ValueError, match=r"^config: expected num_classes=19 \(data's topics\) and pad_id=0 "):
        fine_tune(None, {**record["config"], **change}, data, 0.05, seed=0, steps=1)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"num_classes": 40}, r"^model: expected num_classes=19 \(data's topics\) and pad_id=0"),
        ({"num_classes": None}, r"^model: expected num_classes=19 \(data's topics\) and pad_id=0"),
        ({"pad_id": None}, r"^model: expected num_classes=19 \(data's topics\) and pad_id=0 .*got 19 and None$"),
        ({"vocab_size": 100}, r"^model: expected vocab_size >= 1732 and max_len >= \d+ .*got 100 and 96$"),
    ],
)
def test_topic_correct_refuses_a_model_that_cannot_classify_the_data(record: dict, data: TopicData, change: dict,
                                                                     message: str) -> None:
    model = EncoderOnlyTransformer(**{**record["config"], **change})
    with pytest.raises(ValueError, match=message):
        topic_correct(model, data)  # a wrong head would score silently (0 of 400 with 40 classes)


def test_topic_correct_runs_a_bfloat16_model(record: dict, data: TopicData) -> None:
    model = EncoderOnlyTransformer(**record["config"]).to(torch.bfloat16)
    assert topic_correct(model, data).shape == (len(data.x_test),)  # the padding mask follows the model's dtype


@pytest.mark.parametrize(
    "field, value, error, message",
    [
        ("x_train", "empty", ValueError, r"^x_train\[0\]: expected a non-empty list of ids in \[0, 1732\), got \[\]$"),
        ("x_test", "out of range", ValueError, r"^x_test\[0\]: expected a non-empty list of ids in \[0, 1732\)"),
        ("y_test", "list", TypeError, r"^y_test: expected an int64 tensor, got list$"),
        ("y_test", "2-D", ValueError, r"^y_test: expected shape \(400,\), one label per sentence of x_test"),
        ("y_train", "label 19", ValueError, r"^y_train: expected labels in \[0, 19\), got 0\.\.19$"),
    ],
)
def test_topic_data_refuses_what_would_give_a_wrong_answer(data: TopicData, field: str, value: str, error: type,
                                                           message: str) -> None:
    bad = {
        "empty": [[], *data.x_train[1:]],
        "out of range": [[5, 99999], *data.x_test[1:]],
        "list": data.y_test.tolist(),
        "2-D": data.y_test[:, None],
        "label 19": torch.cat([data.y_train[:-1], torch.tensor([19])]),
    }[value]
    with pytest.raises(error, match=message):
        dataclasses.replace(data, **{field: bad})


def test_topic_accuracy_counts_whole_sentences_and_agrees_with_the_stored_grid(record: dict) -> None:
    assert topic_accuracy(torch.tensor([True, False, True, True])) == 75.0
    for arm in ("pre-trained", "scratch"):
        for fraction in record["fractions"]:
            for acc, right in zip(record["accuracy"][arm][fraction], record["correct"][arm][fraction], strict=True):
                assert topic_accuracy(torch.tensor([c == "1" for c in right])) == acc


@pytest.mark.parametrize(("right", "error", "words"), [
    ([1, 0, 1], TypeError, "Tensor"),
    (torch.tensor([1, 0, 1]), TypeError, "bool"),
    (torch.tensor([[True, False]]), ValueError, r"shape \(N,\) with N >= 1, got \(1, 2\)"),
    (torch.tensor([], dtype=torch.bool), ValueError, r"shape \(N,\) with N >= 1, got \(0,\)"),
    (torch.ones(3, dtype=torch.bool, device="meta"), TypeError, "meta"),
    (torch.nested.nested_tensor([torch.ones(2, dtype=torch.bool), torch.ones(3, dtype=torch.bool)]), TypeError,
     "nested"),
])
def test_topic_accuracy_refuses_what_is_not_a_row_of_right_and_wrong(right, error, words: str) -> None:
    with pytest.raises(error, match=words):
        topic_accuracy(right)
