"""The trained models the book ships, loaded ready to use, so a reader can play without training first.

- :func:`load_translator`: chapter 10's English → Chinese Transformer, trained with the full recipe of
  ``benchmarks/train_translation.py`` (the chapter's own run is shorter).
- :func:`load_poet`: chapter 17's small GPT of Tang poems, trained by ``tools/make_poet.py`` with the chapter's
  recipe for four times the chapter's budget.

The weights live in ``tformer/book/checkpoints/``; each file records the settings that rebuild its model, the
command that made it and what it scored, and ``tests/unit/book/test_checkpoints.py`` checks the record.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import torch

from tformer.data.text import Vocab
from tformer.environment import check_device
from tformer.models import Transformer, TransformerConfig
from tformer.training.train import load_checkpoint
from tformer.variants.modern_block import ModernDecoderConfig, ModernDecoderLM

__all__ = ["POET_FILE", "POET_PROMPT", "TRANSLATOR_FILE", "ShippedPoet", "ShippedTranslator", "load_poet",
           "load_translator"]

TRANSLATOR_FILE = "translator_en_zh.pt"
POET_FILE = "poet_tang.pt"
POET_PROMPT = "白日"  # the opening of the record's poems ("the white sun"; 王之渙's 登鸛雀樓 starts so)


@dataclass(frozen=True)
class ShippedTranslator:
    """A trained translator and what it needs: ``translate(model, sentences, src_vocab, tgt_vocab)`` uses it.

    Attributes:
        model: the :class:`~tformer.models.Transformer`, in eval mode, float32.
        src_vocab, tgt_vocab: the English and Chinese word vocabularies it was trained with (ids in the model's
            embeddings and output layer).
        record: what the file stores besides the weights: ``config`` (the settings), ``recipe`` (the command
            that trained it), ``steps``, ``train_cpu_s`` (CPU seconds of one thread), ``test_exact_match`` and
            ``combinations_exact_match`` (fractions in [0, 1]), ``test_bleu`` (corpus BLEU, 0–100) and
            ``the_cat_sat_on_the_mat`` (its greedy translation).
    """

    model: Transformer
    src_vocab: Vocab
    tgt_vocab: Vocab
    record: dict[str, Any]


def load_translator(device: torch.device | str = "cpu") -> ShippedTranslator:
    """Load the shipped English → Chinese translator onto ``device``.

    Source: the model of Vaswani et al. (2017) at the book's size (D = 64, H = 4, 2 + 2 pre-norm layers,
    F = 256), trained on the running-example corpus (``tformer.data.corpus.generate_corpus(seed=0)``).

    Raises:
        TypeError: if ``device`` is not a str or ``torch.device``.
        ValueError: if ``device`` is not a CPU or GPU this machine has (``"cuda"`` without a GPU, ``"meta"``;
            :func:`~tformer.environment.check_device`), or the stored weights do not fit the stored settings (a
            damaged file), as :func:`~tformer.training.train.load_checkpoint`.
    """
    target = check_device(device, "translator")
    path = resources.files("tformer.book.checkpoints") / TRANSLATOR_FILE
    with resources.as_file(path) as file:
        record = torch.load(file, map_location="cpu", weights_only=True)["extra"]
        model = Transformer(TransformerConfig(**record["config"]))
        stored = load_checkpoint(file, model)
    vocabs = stored["vocabs"]
    return ShippedTranslator(model.to(target).eval(), vocabs["src"], vocabs["tgt"], dict(record))


@dataclass(frozen=True)
class ShippedPoet:
    """The trained poet and its characters: :func:`tformer.book.playground.continue_poem` uses it.

    Attributes:
        model: the :class:`~tformer.variants.modern_block.ModernDecoderLM`, in eval mode, float32 (the file
            stores float16 weights; every record below was computed from them).
        vocab: the characters of the training poems (ids of the model's embedding and output layer).
        record: ``config``, ``recipe``, ``steps``, ``train_cpu_s`` (CPU seconds of one thread), ``val_nats`` and
            ``val_bits`` (validation loss per character), ``greedy`` (its greedy poem from :data:`POET_PROMPT`)
            and ``sampled`` (temperature 0.8, top-p 0.9, seed 0, from the same opening).
    """

    model: ModernDecoderLM
    vocab: Vocab
    record: dict[str, Any]


def load_poet(device: torch.device | str = "cpu") -> ShippedPoet:
    """Load the shipped poet onto ``device``.

    Source: chapter 17's model (:func:`tformer.book.poet.poet_config`: 2 layers of the 2024 block, D = 128),
    trained on :func:`tformer.data.poems.load_tang_poems`'s training poems.

    Raises:
        TypeError / ValueError: as :func:`load_translator`.
    """
    target = check_device(device, "poet")
    path = resources.files("tformer.book.checkpoints") / POET_FILE
    with resources.as_file(path) as file:
        record = torch.load(file, map_location="cpu", weights_only=True)["extra"]
        model = ModernDecoderLM(ModernDecoderConfig(**record["config"]))
        stored = load_checkpoint(file, model)
    return ShippedPoet(model.to(target).eval(), stored["vocabs"]["chars"], dict(record))
