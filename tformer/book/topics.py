"""Chapter 12's fine-tuning study: an encoder, pre-trained or from scratch, fine-tuned to name an HSK sentence's topic.

The data are chapter 11's HSK sentences in the package's seeded split (:func:`tformer.data.hsk.split_hsk`): the
characters of each sentence (punctuation included) as ids of a vocabulary with ``<mask>`` at id 4, and the
sentence's topic as its label. Fine-tuning (:func:`fine_tune`) is the same for both arms: a linear layer on the
mean of the characters' vectors, AdamW, batches of 32 labelled sentences drawn from a share of the training
labels, a fixed number of steps, then the accuracy on the test split.

The whole grid (3 seeds x 3 shares of the labels x 2 arms, 35 to 100 seconds of one CPU thread, by machine) is run by
``benchmarks/finetune_hsk_topics.py`` and stored in ``tformer/book/benchmarks/hsk_finetune.json``
(:func:`load_finetune_record`); the chapter runs one pair of it again and checks that it gives the stored numbers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

import torch
from torch import Tensor, nn

from tformer._checks import check_int, check_number, check_tensor, check_type
from tformer.data.hsk import load_hsk, split_hsk
from tformer.data.text import PAD_ID, Vocab, pad_sequences
from tformer.environment import check_device, seed_everything
from tformer.models import EncoderOnlyConfig, EncoderOnlyTransformer

__all__ = ["FINETUNE_STEPS", "FRACTIONS", "RECORD", "TopicData", "fine_tune", "fine_tune_model", "load_finetune_record",
           "topic_accuracy", "topic_correct", "topic_data", "topic_logits"]

FINETUNE_STEPS = 150  # fine-tuning steps of every run, whatever the share of labels
FRACTIONS = (0.05, 0.2, 1.0)  # shares of the training labels: a twentieth, a fifth, all
BATCH, LR, WEIGHT_DECAY = 32, 1e-3, 0.01  # one recipe for both arms, tuned for neither
RECORD = "hsk_finetune.json"  # in tformer/book/benchmarks/


@dataclass(frozen=True)
class TopicData:
    """HSK sentences as character ids and topic labels.

    Attributes:
        vocab: ``<mask>`` (id 4), then the training split's characters by falling frequency.
        topics: the topic names, sorted; a label is an index into it.
        unlabelled: the pre-training text: the training and validation sentences' ids (no label, no test sentence).
        x_train, x_test: each sentence's ids (lists of ints).
        y_train, y_test: int64 tensors ``(N,)`` of topic labels.

    Raises:
        TypeError: if a label tensor is not an int64 tensor.
        ValueError: if a label tensor is not 1-D with one label per sentence or holds a label outside
            ``[0, len(topics))``, a split is empty, or a sentence is empty or holds an id outside ``[0, len(vocab))``
            (an empty sentence would make its mean-pooled vector NaN).
    """

    vocab: Vocab
    topics: list[str]
    unlabelled: list[list[int]]
    x_train: list[list[int]]
    y_train: Tensor
    x_test: list[list[int]]
    y_test: Tensor

    def __post_init__(self) -> None:
        for split in ("train", "test"):
            x, y = getattr(self, f"x_{split}"), getattr(self, f"y_{split}")
            if not isinstance(y, Tensor) or y.dtype != torch.int64:
                raise TypeError(f"y_{split}: expected an int64 tensor, got {getattr(y, 'dtype', type(y).__name__)}")
            if y.dim() != 1 or len(y) != len(x) or len(x) == 0:
                raise ValueError(f"y_{split}: expected shape ({len(x)},), one label per sentence of x_{split} (at least "
                                 f"one), got {tuple(y.shape)}")
            if int(y.min()) < 0 or int(y.max()) >= len(self.topics):
                raise ValueError(f"y_{split}: expected labels in [0, {len(self.topics)}), got {int(y.min())}..{int(y.max())}")
        for name in ("unlabelled", "x_train", "x_test"):
            for i, sentence in enumerate(getattr(self, name)):
                if len(sentence) == 0 or min(sentence) < 0 or max(sentence) >= len(self.vocab):
                    raise ValueError(f"{name}[{i}]: expected a non-empty list of ids in [0, {len(self.vocab)}), got "
                                     f"{list(sentence)[:8]}")

    @property
    def mask_id(self) -> int:
        """The id of ``<mask>``, what pre-training hides characters behind."""
        return self.vocab.stoi["<mask>"]


def topic_data() -> TopicData:
    """Load the HSK sentences and build :class:`TopicData` (the vocabulary the shipped encoders were trained with)."""
    split = split_hsk(load_hsk().sentences)
    chars = Vocab.build([list(s.chinese) for s in split.train])  # punctuation included
    vocab = Vocab(["<mask>", *chars.to_list()])  # one extra token, id 4; characters from id 5
    topics = sorted({s.topic for s in split.train})
    topic_id = {t: i for i, t in enumerate(topics)}

    def ids(sentences: list) -> list[list[int]]:
        return [vocab.encode(list(s.chinese)) for s in sentences]

    return TopicData(vocab, topics, ids(split.train + split.validation), ids(split.train),
                     torch.tensor([topic_id[s.topic] for s in split.train]), ids(split.test),
                     torch.tensor([topic_id[s.topic] for s in split.test]))


def topic_logits(model: EncoderOnlyTransformer, chars: Tensor) -> Tensor:
    """``(B, L)`` ids -> ``(B, topics)`` logits: the mean of the characters' vectors (padding left out), then the
    model's ``classifier`` (a linear layer, ``EncoderOnlyTransformer(num_classes=...)``).

    Mean pooling is Sentence-BERT's default (Reimers & Gurevych 2019, §3); BERT reads a ``[CLS]`` position instead
    (Devlin et al. 2019, §3), trained by a second pre-training task this book does not run.
    """
    hidden = model.encode(chars)  # (B, L, D)
    real = (chars != PAD_ID).unsqueeze(-1).to(hidden.dtype)  # (B, L, 1), in the model's dtype
    return model.classifier((hidden * real).sum(1) / real.sum(1))  # (B, topics)


def _check_fits(name: str, config: EncoderOnlyConfig, data: TopicData) -> None:
    """Refuse a model (or its config) that cannot classify ``data``: the head, the padding, the vocabulary, the length."""
    longest = max(len(s) for s in (*data.x_train, *data.x_test))
    if (config.num_classes, config.pad_id) != (len(data.topics), PAD_ID):  # the head, the padding
        raise ValueError(f"{name}: expected num_classes={len(data.topics)} (data's topics) and pad_id={PAD_ID} (the "
                         f"padding of the batches), got {config.num_classes} and {config.pad_id}")
    if config.vocab_size < len(data.vocab) or (config.max_len is not None and config.max_len < longest):
        raise ValueError(f"{name}: expected vocab_size >= {len(data.vocab)} and max_len >= {longest} (data's "
                         f"vocabulary and longest sentence), got {config.vocab_size} and {config.max_len}")


def fine_tune(start: EncoderOnlyTransformer | None, config: dict[str, Any], data: TopicData, fraction: float,
              seed: int, *, steps: int = FINETUNE_STEPS, device: str | torch.device = "cpu") -> float:
    """Topic accuracy (%) on the test split after ``steps`` steps on ``fraction`` of the training labels.

    :func:`fine_tune_model`, then :func:`topic_correct`; the arguments and errors are :func:`fine_tune_model`'s.

    Returns:
        The accuracy in percent: 100 x (sentences right) / (test sentences), computed exactly.
    """
    model = fine_tune_model(start, config, data, fraction, seed, steps=steps, device=device)
    return topic_accuracy(topic_correct(model, data))


def fine_tune_model(start: EncoderOnlyTransformer | None, config: dict[str, Any], data: TopicData, fraction: float,
                    seed: int, *, steps: int = FINETUNE_STEPS,
                    device: str | torch.device = "cpu") -> EncoderOnlyTransformer:
    """Fine-tune an encoder for ``steps`` steps on ``fraction`` of the training labels; return it in eval mode.

    The model is built right after the random seeds (Python's, NumPy's and torch's global generators:
    :func:`tformer.environment.seed_everything`) are set to ``seed``, so both arms start from the same weights;
    ``start`` (a pre-trained encoder, or ``None`` for the control from scratch) then overwrites them.
    The labelled share and the batches come from a generator seeded with ``1000 + seed``: the same for both
    arms. Dropout is on while training (``config["dropout"]``), off afterwards. Recipe: mean pooling
    (:func:`topic_logits`), AdamW (Loshchilov & Hutter 2019) at ``LR`` with weight decay ``WEIGHT_DECAY``,
    batches of ``BATCH`` sentences drawn with replacement.

    Args:
        start: the pre-trained encoder to copy, or ``None``.
        config: ``EncoderOnlyTransformer`` keyword arguments, ``num_classes`` included.
        data: from :func:`topic_data`.
        fraction: share of the training labels, in ``(0, 1]``.
        seed: the run's seed.
        steps: fine-tuning steps.
        device: where to train.

    Returns:
        The fine-tuned ``EncoderOnlyTransformer`` on ``device``, in eval mode.

    Raises:
        TypeError: if ``start`` is not an encoder-only model or ``None``, ``config`` is not a dict, or ``data`` is
            not a TopicData (and as ``EncoderOnlyTransformer`` for the config's entries).
        ValueError: on a ``start`` built with another config, a ``config`` whose ``num_classes`` is not the
            number of topics or whose ``pad_id`` is not ``PAD_ID``, a vocabulary or ``max_len`` too small for
            ``data``, a ``fraction`` outside ``(0, 1]`` or too
            small to label one sentence, a negative ``seed``, ``steps`` < 1, or an unknown device.
    """
    if start is not None:
        check_type("start", start, EncoderOnlyTransformer, "an EncoderOnlyTransformer or None")
    check_type("config", config, dict, "a dict of EncoderOnlyTransformer arguments")
    check_type("data", data, TopicData)
    fraction = check_number("fraction", fraction, 0.0, 1.0, open_min=True)
    seed = check_int("seed", seed, 0)
    steps = check_int("steps", steps, 1)
    device = check_device(device, "fine-tuned model")
    if round(fraction * len(data.x_train)) < 1:
        raise ValueError(f"fraction: expected a share that labels at least one of the {len(data.x_train)} training "
                         f"sentences, got {fraction!r}")
    seed_everything(seed)
    model = EncoderOnlyTransformer(**config)  # the control: random weights
    _check_fits("config", model.config, data)
    if start is not None:
        if start.config != model.config:  # else load_state_dict fails inside torch, on a tensor's shape
            raise ValueError(f"start: expected an encoder built from config, got one built as {start.config}")
        model.load_state_dict(start.state_dict())  # the same model, pre-trained
    model.to(device)
    g = torch.Generator().manual_seed(1000 + seed)  # the labelled share and batches: the same for both arms
    labelled = torch.randperm(len(data.x_train), generator=g)[: round(fraction * len(data.x_train))].tolist()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    model.train()
    for _ in range(steps):
        pick = [labelled[i] for i in torch.randint(len(labelled), (BATCH,), generator=g).tolist()]
        logits = topic_logits(model, pad_sequences([data.x_train[i] for i in pick]).to(device))  # (B, topics)
        loss = nn.functional.cross_entropy(logits, data.y_train[pick].to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return model.eval()


def topic_correct(model: EncoderOnlyTransformer, data: TopicData) -> Tensor:
    """Which test sentences ``model`` names the topic of: a bool tensor ``(N_test,)``, in the split's order.

    The model is put in eval mode and run without gradients on its own device, 200 sentences at a time.

    Raises:
        TypeError: if ``model`` is not an EncoderOnlyTransformer or ``data`` not a TopicData.
        ValueError: if the model's ``num_classes`` is not the number of topics, its ``pad_id`` is not ``PAD_ID``,
            or its vocabulary or ``max_len`` is too small for ``data``.
    """
    check_type("model", model, EncoderOnlyTransformer)
    check_type("data", data, TopicData)
    _check_fits("model", model.config, data)
    device = next(model.parameters()).device
    model.eval()
    with torch.no_grad():
        guesses = torch.cat([topic_logits(model, pad_sequences(data.x_test[i : i + 200]).to(device)).argmax(-1).cpu()
                             for i in range(0, len(data.x_test), 200)])
    return guesses == data.y_test


def topic_accuracy(right: Tensor) -> float:
    """The accuracy in percent of :func:`topic_correct`'s answer: 100 x (sentences right) / (sentences).

    An int over an int (whole sentences), so it is free of float32 rounding and the same on every machine.

    Args:
        right: a bool tensor ``(N,)``, one entry per test sentence, True where the topic was named correctly.

    Raises:
        TypeError: if ``right`` is not a tensor of dtype ``torch.bool``, or holds no data (a meta tensor) or is
            nested.
        ValueError: if ``right`` is not one-dimensional or is empty.
    """
    check_type("right", right, Tensor)
    if right.is_meta or right.is_nested:
        raise TypeError("right: expected a tensor that holds its values (topic_correct's answer), got a "
                        f"{'meta' if right.is_meta else 'nested'} tensor")
    check_tensor("right", right, shape="(N,)", dtype=torch.bool, nonempty="N")
    return 100 * int(right.sum()) / right.numel()


def load_finetune_record() -> dict[str, Any]:
    """The grid ``benchmarks/finetune_hsk_topics.py`` stored: settings, ``accuracy[arm][fraction]`` per seed, and
    ``correct[arm][fraction]`` per seed: which test sentences the run got right, as a string of ``"0"``/``"1"``
    in the test split's order (what a paired comparison of the two arms needs).

    ``arm`` is ``"pre-trained"`` or ``"scratch"``; ``fraction`` is written as in :data:`FRACTIONS` (``"0.05"``).
    """
    path = resources.files("tformer.book.benchmarks") / RECORD
    return json.loads(path.read_text(encoding="utf-8"))
