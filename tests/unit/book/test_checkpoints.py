"""The pre-trained encoders the book ships (chapter 11, §3) are what their records say they are.

Each file must load into the model its record describes, with chapter 11's vocabulary, and predict masked
characters of held-out text about as well as its recorded final training loss says; a model with random weights
(the check's control) is far worse, so the check can fail.
"""

from __future__ import annotations

import math
from importlib import resources

import pytest
import torch

from tformer.data.hsk import load_hsk, split_hsk
from tformer.data.text import Vocab, pad_sequences
from tformer.models import EncoderOnlyTransformer
from tformer.training.mlm import mlm_loss
from tformer.training.train import load_checkpoint

SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def data() -> tuple[Vocab, torch.Tensor]:
    split = split_hsk(load_hsk().sentences)
    vocab = Vocab(["<mask>", *Vocab.build([list(s.chinese) for s in split.train]).to_list()])  # as chapter 11
    return vocab, pad_sequences(
        [vocab.encode(list(s.chinese)) for s in split.test]
    )  # (400, L): never trained on


def held_out_loss(model: EncoderOnlyTransformer, vocab: Vocab, tokens: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        loss, _ = mlm_loss(model, tokens, mask_id=vocab.stoi["<mask>"], vocab_size=len(vocab),
                           generator=torch.Generator().manual_seed(0))  # fmt: skip
    return loss.item()


@pytest.mark.parametrize("seed", SEEDS)
def test_shipped_encoder_matches_its_record(seed: int, data: tuple[Vocab, torch.Tensor]) -> None:
    vocab, tokens = data
    path = resources.files("tformer.book.checkpoints") / f"hsk_mlm_seed{seed}.pt"
    config = torch.load(path, weights_only=True)["extra"]["config"]
    model = EncoderOnlyTransformer(**config)
    stored = load_checkpoint(path, model, vocabs={"chars": vocab})  # raises on another vocabulary
    extra = stored["extra"]
    assert extra["seed"] == seed and extra["budget_cpu_s"] >= 200 and stored["history"].steps >= 1000
    loss = held_out_loss(model, vocab, tokens)
    # held-out text, no dropout: within 0.5 nats of the final training loss (measured gap: about 0.2)
    assert abs(loss - extra["final_loss"]) < 0.5, (loss, extra["final_loss"])
    assert loss < 0.6 * math.log(len(vocab))
    torch.manual_seed(seed)
    assert held_out_loss(EncoderOnlyTransformer(**config), vocab, tokens) > math.log(len(vocab)) - 1.0
