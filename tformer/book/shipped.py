"""The trained models the book ships, loaded ready to use, so a reader can play without training first.

- :func:`load_translator`: chapter 10's English → Chinese Transformer, trained with the full recipe of
  ``benchmarks/train_translation.py`` (the chapter's own run is shorter).

The weights live in ``tformer/book/checkpoints/``; each file records the settings that rebuild its model, the
command that made it and what it scored, and ``tests/unit/book/test_checkpoints.py`` checks the record.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import torch

from tformer._checks import check_type
from tformer.data.text import Vocab
from tformer.models import Transformer, TransformerConfig
from tformer.training.train import load_checkpoint

__all__ = ["TRANSLATOR_FILE", "ShippedTranslator", "load_translator"]

TRANSLATOR_FILE = "translator_en_zh.pt"


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
        ValueError: if ``device`` names no device torch knows or one this machine lacks (``"cuda"`` without a
            GPU), or the stored weights do not fit the stored settings (a damaged file), as
            :func:`~tformer.training.train.load_checkpoint`.
    """
    check_type("device", device, (str, torch.device))
    try:
        target = torch.device(device)
    except RuntimeError:
        raise ValueError(f"device: expected a torch device such as 'cpu' or 'cuda', got {device!r}") from None
    if target.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device: expected a device this machine has, got {device!r} (torch sees no CUDA GPU)")
    if target.type == "meta":
        raise ValueError("device: expected a device that holds values, got 'meta' (a translator needs its weights)")
    path = resources.files("tformer.book.checkpoints") / TRANSLATOR_FILE
    with resources.as_file(path) as file:
        record = torch.load(file, map_location="cpu", weights_only=True)["extra"]
        model = Transformer(TransformerConfig(**record["config"]))
        stored = load_checkpoint(file, model)
    vocabs = stored["vocabs"]
    return ShippedTranslator(model.to(target).eval(), vocabs["src"], vocabs["tgt"], dict(record))
