"""Masked-token pre-training: BERT's 80/10/10 corruption (Devlin et al. 2019, §3.1) and its loss."""

from __future__ import annotations

import pytest
import torch

from tformer.models import EncoderOnlyTransformer
from tformer.training.mlm import mask_tokens, mlm_loss

MASK_ID, V = 4, 50


def batch(seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(MASK_ID + 1, V, (256, 40), generator=g)  # (B, L)
    tokens[:, 30:] = 0  # right padding
    return tokens


def test_shares_follow_bert_rule() -> None:
    tokens = batch()
    corrupted, labels = mask_tokens(
        tokens, mask_id=MASK_ID, vocab_size=V, generator=torch.Generator().manual_seed(1)
    )
    chosen = labels != 0
    n = chosen.sum().item()
    # 256·30 = 7,680 real tokens; binomial standard deviations are about 0.4% (rate) and 0.5% (80/10/10 split)
    assert n / 7680 == pytest.approx(0.15, abs=0.015)
    assert (corrupted[chosen] == MASK_ID).float().mean().item() == pytest.approx(0.8, abs=0.03)
    kept = (corrupted[chosen] == tokens[chosen]).float().mean().item()
    assert kept == pytest.approx(
        0.1 + 0.1 / (V - MASK_ID - 1), abs=0.03
    )  # 10% kept, plus random draws that hit
    assert torch.equal(labels[chosen], tokens[chosen])  # labels hold the originals
    assert torch.equal(corrupted[~chosen], tokens[~chosen])  # nothing else changes
    assert not chosen[:, 30:].any()  # padding is never chosen
    random_ids = corrupted[chosen & (corrupted != MASK_ID)]
    assert random_ids.min().item() > MASK_ID  # never a special token or <mask> itself


def test_rate_zero_and_one() -> None:
    tokens = batch()
    corrupted, labels = mask_tokens(tokens, mask_id=MASK_ID, vocab_size=V, rate=0.0)
    assert torch.equal(corrupted, tokens) and (labels == 0).all()
    _, labels = mask_tokens(tokens, mask_id=MASK_ID, vocab_size=V, rate=1.0)
    assert torch.equal(labels, tokens)  # every real token chosen, padding still not


def test_generator_makes_it_reproducible() -> None:
    tokens = batch()
    a = mask_tokens(tokens, mask_id=MASK_ID, vocab_size=V, generator=torch.Generator().manual_seed(3))
    b = mask_tokens(tokens, mask_id=MASK_ID, vocab_size=V, generator=torch.Generator().manual_seed(3))
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_loss_scores_only_chosen_positions() -> None:
    torch.manual_seed(0)
    model = EncoderOnlyTransformer(V, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=40, dropout=0.0)
    tokens = batch()
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    loss, n = mlm_loss(model, tokens, mask_id=MASK_ID, vocab_size=V, generator=g1)
    corrupted, labels = mask_tokens(tokens, mask_id=MASK_ID, vocab_size=V, generator=g2)
    logits = model(corrupted)  # (B, L, V)
    chosen = labels != 0
    expected = torch.nn.functional.cross_entropy(logits[chosen], labels[chosen])
    assert n == int(chosen.sum())
    torch.testing.assert_close(loss, expected, rtol=1e-6, atol=1e-6)


def test_no_chosen_token_gives_zero_not_nan() -> None:
    model = EncoderOnlyTransformer(V, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=40)
    loss, n = mlm_loss(model, batch(), mask_id=MASK_ID, vocab_size=V, rate=0.0)
    assert n == 0 and loss.item() == 0.0
    loss.backward()  # still a graph: a training loop may call backward on it


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"tokens": torch.zeros(2, 3)}, TypeError, "tokens: expected an integer tensor"),
        ({"tokens": torch.zeros(3, dtype=torch.long)}, ValueError, "tokens"),
        ({"rate": 1.5}, ValueError, "rate"),
        # the default first_word_id is mask_id + 1: a range it leaves empty is mask_id's fault, not first_word_id's
        ({"mask_id": 49}, ValueError, "mask_id: expected an id above pad_id=0 and below vocab_size - 1=49"),
        ({"mask_id": 3, "pad_id": 7}, ValueError, "mask_id: expected an id above pad_id=7"),
        ({"mask_id": 10, "first_word_id": 10}, ValueError, "first_word_id: expected an id above mask_id=10"),
        ({"first_word_id": 50}, ValueError, "first_word_id: expected an id below vocab_size=50"),
        ({"vocab_size": 2.0}, TypeError, "vocab_size: expected an int"),
        ({"mask_id": 0}, ValueError, "mask_id: expected an id other than pad_id=0"),
        ({"mask_id": 50}, ValueError, "mask_id"),
        ({"first_word_id": 3}, ValueError, "first_word_id: expected an id above mask_id=4"),
        ({"tokens": torch.full((2, 3), 50)}, ValueError, r"tokens: expected ids in \[0, V=50\)"),
        ({"tokens": torch.full((2, 3), -1)}, ValueError, "tokens: expected ids"),
        ({"generator": 3}, TypeError, "generator: expected a torch.Generator"),
        ({"pad_id": "0"}, TypeError, "pad_id: expected an int"),
    ],
)
def test_bad_input(kwargs: dict, error: type, message: str) -> None:
    args = {"tokens": batch(), "mask_id": MASK_ID, "vocab_size": V} | kwargs
    with pytest.raises(error, match=message):
        mask_tokens(**args)


def test_pretrain_mlm_lowers_the_loss_on_a_learnable_text() -> None:
    from tformer.training.mlm import pretrain_mlm

    torch.manual_seed(0)
    model = EncoderOnlyTransformer(V, d_model=32, num_heads=2, num_layers=1, d_ff=64, max_len=40, dropout=0.0)
    sentences = [
        [5 + (i + j) % 10 for j in range(12)] for i in range(50)
    ]  # each token predicts its neighbours
    history = pretrain_mlm(model, sentences, mask_id=MASK_ID, vocab_size=V, max_steps=150, device="cpu")
    assert history.steps == 150
    assert sum(history.losses[-10:]) / 10 < 0.5 * sum(history.losses[:10]) / 10


@pytest.mark.parametrize(
    ("sentences", "kwargs", "error", "message"),
    [
        ([], {}, ValueError, "sentences: expected a non-empty list"),
        ([[5, 6], []], {}, ValueError, r"sentences\[1\]: expected a non-empty sentence"),
        ([[5, 0, 6]], {}, ValueError, r"sentences\[0\]: expected ids in \[1, vocab_size=50\)"),
        ([[5.5, 6.0]], {}, TypeError, r"sentences\[0\]: expected a list of int token ids"),
        (["abc"], {}, TypeError, r"sentences\[0\]: expected a list of int"),
        ([[5, 6]], {"seed": 1.5}, TypeError, "seed: expected an int"),
        ([[5, 6]], {"max_steps": 2.0}, TypeError, "max_steps: expected an int"),
        ([[5, 6]], {"batch_size": 0}, ValueError, "batch_size"),
        ([[5, 6]], {"max_steps": None}, ValueError, "expected at least one budget"),
        # vocab_size and mask_id are checked before the sentences are compared with them
        ([[5, 6]], {"vocab_size": "50"}, TypeError, "vocab_size: expected an int"),
        ([[5, 6]], {"vocab_size": 1}, ValueError, "vocab_size"),
        ([[5, 6]], {"mask_id": 0}, ValueError, "mask_id"),
        ([[5, 6]], {"mask_id": 50}, ValueError, "mask_id"),
        ([[5, 6]], {"mask_id": 49}, ValueError, "mask_id"),  # no id above it is left to draw random words from
        ([[5, 6]], {"vocab_size": 2, "mask_id": 1}, ValueError, "vocab_size"),
        ((s for s in [[5, 6]]), {}, TypeError, "sentences: expected a list of id lists, got generator"),
        ([5, 6], {}, TypeError, r"sentences\[0\]: expected a list of int token ids, got 5"),
    ],
)
def test_pretrain_mlm_bad_input(sentences: list, kwargs: dict, error: type, message: str) -> None:
    from tformer.training.mlm import pretrain_mlm

    model = EncoderOnlyTransformer(V, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=40)
    args = {"mask_id": MASK_ID, "vocab_size": V, "max_steps": 1, "device": "cpu"} | kwargs
    with pytest.raises(error, match=message):
        pretrain_mlm(model, sentences, **args)


def test_pretrain_mlm_names_the_model_whose_padding_it_cannot_mask() -> None:
    from tformer.training.mlm import pretrain_mlm

    model = EncoderOnlyTransformer(V, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=40, pad_id=None)
    with pytest.raises(ValueError, match=r"^model: expected a model whose pad_id is 0 \(the batches are padded with "
                                         r"it\), got pad_id=None$"):
        pretrain_mlm(model, [[5, 6]], mask_id=MASK_ID, vocab_size=V, max_steps=1, device="cpu")


def test_labels_are_int64_whatever_came_in() -> None:
    corrupted, labels = mask_tokens(batch().int(), mask_id=MASK_ID, vocab_size=V)
    assert corrupted.dtype == labels.dtype == torch.int64


def test_no_chosen_token_is_zero_even_with_infinite_logits() -> None:
    class Infinite(torch.nn.Module):
        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            return torch.full((*tokens.shape, V), float("-inf"), requires_grad=True)

    loss, n = mlm_loss(Infinite(), batch(), mask_id=MASK_ID, vocab_size=V, rate=0.0)
    assert n == 0 and loss.item() == 0.0


def test_logits_of_the_wrong_shape_are_refused() -> None:
    class Transposed(torch.nn.Module):
        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            return torch.zeros(tokens.shape[1], tokens.shape[0], V)  # (L, B, V)

    with pytest.raises(ValueError, match=r"model\(tokens\)"):
        mlm_loss(Transposed(), batch()[:, :30], mask_id=MASK_ID, vocab_size=V)


def test_loss_refuses_a_model_that_pads_with_another_id() -> None:
    from tformer.training.mlm import pretrain_mlm

    model = EncoderOnlyTransformer(V, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=40, dropout=0.0,
                                   pad_id=1)
    with pytest.raises(ValueError, match=r"pad_id: expected the model's pad_id=1 \(the keys it masks as padding\), "
                                         r"got 0"):
        mlm_loss(model, batch(), mask_id=MASK_ID, vocab_size=V)
    with pytest.raises(ValueError, match=r"^model: expected a model whose pad_id is 0 .* got pad_id=1$"):
        pretrain_mlm(model, [[5, 6, 7], [8, 9]], mask_id=MASK_ID, vocab_size=V, max_steps=1, device="cpu")
