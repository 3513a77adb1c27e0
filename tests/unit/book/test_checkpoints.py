"""The models the book ships (chapter 12's pre-trained encoders, chapter 10's translator) are what their records say.

Each encoder must load into the model its record describes, with the HSK characters' vocabulary, and predict
masked characters of held-out text about as well as its recorded final training loss says; the translator must
load in a fresh interpreter and score its recorded exact match. A model with random weights (each check's
control) is far worse, so the checks can fail.
"""

from __future__ import annotations

import math
import subprocess
import sys
from importlib import resources

import pytest
import torch

from tformer.book.shipped import load_translator
from tformer.data.corpus import generate_corpus
from tformer.data.hsk import load_hsk, split_hsk
from tformer.data.text import UNK_ID, Vocab, pad_sequences
from tformer.models import EncoderOnlyTransformer, Transformer, TransformerConfig
from tformer.training.metrics import evaluate_translation
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


# --------------------------------------------------------------------------- chapter 10's shipped translator
def test_shipped_translator_loads_in_a_fresh_interpreter_and_repeats_its_record() -> None:
    """A reader's first call: a new Python process loads the file and translates the running example as the
    record says it did when the file was written."""
    code = (
        "from tformer.book.shipped import load_translator\n"
        "from tformer.training.metrics import translate\n"
        "t = load_translator()\n"
        "print(translate(t.model, ['the cat sat on the mat'], t.src_vocab, t.tgt_vocab)[0])\n"
        "print(t.record['the_cat_sat_on_the_mat'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    got, recorded = out.stdout.strip().splitlines()
    assert got == recorded == "猫 坐 在 垫子 上"


def test_shipped_translator_scores_its_recorded_exact_match_and_an_untrained_one_does_not() -> None:
    translator = load_translator()
    record = translator.record
    corpus = generate_corpus(seed=0)
    report = evaluate_translation(translator.model, corpus.test, translator.src_vocab, translator.tgt_vocab)
    # the same greedy decoding of the same weights; a near-tie may flip with the thread count: one sentence of slack
    assert abs(report.exact_match - record["test_exact_match"]) <= 1 / len(corpus.test)
    assert record["test_exact_match"] > 0.99 and record["steps"] == 1400
    torch.manual_seed(0)
    untrained = Transformer(TransformerConfig(**record["config"])).eval()  # the control: the same model, untrained
    control = evaluate_translation(untrained, corpus.test[:200], translator.src_vocab, translator.tgt_vocab)
    assert control.exact_match < 0.05


@pytest.mark.parametrize(("device", "error"), [(1.5, TypeError), ("gpu", ValueError), ("meta", ValueError)])
def test_load_translator_refuses_a_device_it_cannot_use(device: object, error: type[Exception]) -> None:
    with pytest.raises(error, match=r"^device: expected"):
        load_translator(device)  # type: ignore[arg-type]


def test_the_translators_unk_vector_never_trained() -> None:
    """Chapter 10 §13 says <unk> never occurred in training, so its vector is the random one it started with:
    every training word is in the vocabulary, so no source id was ever UNK_ID and Adam never moved that row."""
    translator = load_translator()
    torch.manual_seed(0)  # the recipe's seed_everything(0) before the model is built
    fresh = Transformer(TransformerConfig(**translator.record["config"]))
    unk = translator.model.src_embed.weight[UNK_ID]
    assert torch.equal(unk, fresh.src_embed.weight[UNK_ID])
    assert not torch.equal(translator.model.src_embed.weight[UNK_ID + 1], fresh.src_embed.weight[UNK_ID + 1])  # control


# --------------------------------------------------------------------------- chapter 17's shipped poet
def test_shipped_poet_loads_in_a_fresh_interpreter_and_repeats_its_record() -> None:
    """A reader's first call: a new process loads the poet and writes the record's two poems again."""
    code = (
        "from tformer.book.playground import continue_poem\n"
        "from tformer.book.shipped import POET_PROMPT, load_poet\n"
        "p = load_poet()\n"
        "print(continue_poem(p, POET_PROMPT).text == p.record['greedy'])\n"
        "print(continue_poem(p, POET_PROMPT, temperature=0.8, top_p=0.9, seed=0).text == p.record['sampled'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["True", "True"]


def test_shipped_poet_scores_its_record_and_beats_random_weights() -> None:
    from tformer.book.poet import poem_data, validation_loss
    from tformer.book.shipped import load_poet
    from tformer.variants.modern_block import ModernDecoderLM

    poet, data = load_poet(), poem_data()
    assert poet.vocab == data.vocab
    record = poet.record
    assert record["train_cpu_s"] >= 590 and record["steps"] >= 1000
    loss = validation_loss(poet.model, data.validation)
    assert loss == pytest.approx(record["val_nats"], abs=1e-4)  # float32 sums in another order: tiny drift only
    torch.manual_seed(0)
    assert validation_loss(ModernDecoderLM(poet.model.config), data.validation) > loss + 2.0  # the control
