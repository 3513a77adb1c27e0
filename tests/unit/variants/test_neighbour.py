"""NeighbourEmbedding (chapter 11's reading tagger): shapes, pair ids, the <unk> pair, padding invariance, errors."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from tformer.variants.neighbour import NeighbourEmbedding, pair_keys

V, D, PAD = 11, 8, 0


def _sentences() -> list[list[int]]:
    g = torch.Generator().manual_seed(0)
    return [torch.randint(1, V, (n,), generator=g).tolist() for n in (7, 3, 5, 1)]  # odd lengths, one of 1


def _padded(sentences: list[list[int]]) -> torch.Tensor:
    L = max(map(len, sentences))
    return torch.tensor([s + [PAD] * (L - len(s)) for s in sentences])  # (B, L)


def _make(pairs: bool, conv: bool, pad_id: int | None = PAD) -> NeighbourEmbedding:
    torch.manual_seed(0)
    seen = torch.cat([pair_keys(torch.tensor([s]), V)[0] for s in _sentences()[:2]]).unique() if pairs else None
    module = NeighbourEmbedding(nn.Embedding(V, D), seen, conv=conv, pad_id=pad_id)
    with torch.no_grad():  # a pad row far from zero, so a leak would show
        module.embed.weight[PAD].fill_(5.0)
    return module.double()


def test_pair_keys_are_distinct_per_pair_and_mark_the_start() -> None:
    tokens = torch.tensor([[3, 4, 3], [4, 3, 4]])
    keys = pair_keys(tokens, V)
    assert keys.shape == tokens.shape
    assert keys[0, 0] == V * (V + 1) + 3 and keys[0, 1] == 3 * (V + 1) + 4 and keys[1, 1] == 4 * (V + 1) + 3
    every = pair_keys(torch.arange(V).repeat_interleave(V).view(V * V, 1), V)  # every token at a start
    pairs = torch.cartesian_prod(torch.arange(V), torch.arange(V))  # every (previous, token)
    assert len(torch.cat([every.flatten(), pair_keys(pairs, V)[:, 1]]).unique()) == V + V * V


@pytest.mark.parametrize("pairs, conv", [(True, True), (True, False), (False, True), (False, False)])
def test_shapes_and_parameter_counts(pairs: bool, conv: bool) -> None:
    module = _make(pairs, conv)
    tokens = _padded(_sentences())
    out = module(tokens)
    assert out.shape == (*tokens.shape, D) and out.dtype == torch.float64
    extra = sum(p.numel() for name, p in module.named_parameters() if not name.startswith("embed."))
    P = len(module.seen_pairs) if pairs else 0
    assert extra == (pairs * (P + 1) * D) + conv * 4 * D  # a row per seen pair + <unk>; 3 weights + bias per channel


def test_without_pairs_or_conv_it_is_the_embedding() -> None:
    module = _make(False, False)
    tokens = _padded(_sentences())
    assert torch.equal(module(tokens), module.embed(tokens))


def test_unseen_pairs_get_the_zero_unk_row_and_no_gradient() -> None:
    module = _make(True, False)
    seen = torch.tensor([_sentences()[0]])
    unseen = torch.tensor([[s for s in range(V - 1, 0, -1)]])  # descending: pairs the first sentences lack
    assert (module.pair_ids(seen) != module.unk_pair).all()
    ids = module.pair_ids(unseen)
    assert (ids == module.unk_pair).any()
    assert_close(module(unseen), module.embed(unseen) + module.pairs(ids))
    assert module.pairs.weight[module.unk_pair].abs().max() == 0
    module(unseen).sum().backward()
    assert module.pairs.weight.grad[module.unk_pair].abs().max() == 0


@pytest.mark.parametrize("pairs", [True, False])
def test_a_padded_batch_gives_what_each_sentence_gives_alone(pairs: bool) -> None:
    """Padding is zeroed before the convolution: the last real token never sees the pad token's vector."""
    module = _make(pairs, True)
    sentences = _sentences()
    batched = module(_padded(sentences))
    for k, s in enumerate(sentences):
        assert_close(batched[k, : len(s)], module(torch.tensor([s]))[0], atol=1e-12, rtol=1e-12)


def test_without_pad_id_the_pad_vector_leaks() -> None:
    """The control: the same module told no pad id lets the pad row reach the last token of a short sentence."""
    module = _make(False, True, pad_id=None)
    sentences = _sentences()
    batched = module(_padded(sentences))
    short = sentences[1]  # length 3 in a batch of length 7
    alone = module(torch.tensor([short]))[0]
    assert_close(batched[1, : len(short) - 1], alone[:-1])  # the others are untouched
    assert (batched[1, len(short) - 1] - alone[-1]).abs().max() > 1e-3  # the last one sees the pad's 5.0s


def test_gradients_reach_every_part() -> None:
    module = _make(True, True)
    module(_padded(_sentences())).pow(2).sum().backward()
    for name, p in module.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


@pytest.mark.parametrize(
    "make, error, words",
    [
        (lambda: NeighbourEmbedding(nn.Linear(3, 3)), TypeError, "embed: expected an nn.Embedding"),
        (lambda: NeighbourEmbedding(nn.Embedding(V, D), [1, 2]), TypeError, "seen_pairs: expected"),
        (lambda: NeighbourEmbedding(nn.Embedding(V, D), torch.tensor([[1, 2]])), ValueError, "seen_pairs: expected shape"),
        (lambda: NeighbourEmbedding(nn.Embedding(V, D), torch.tensor([3, 2])), ValueError, "strictly increasing"),
        (lambda: NeighbourEmbedding(nn.Embedding(V, D), torch.tensor([1.0])), TypeError, "seen_pairs: expected"),
        (lambda: NeighbourEmbedding(nn.Embedding(V, D), conv=1), TypeError, "conv: expected a bool"),
        (lambda: NeighbourEmbedding(nn.Embedding(V, D), pad_id=V), ValueError, "pad_id: expected an int in"),
    ],
)
def test_bad_arguments_raise(make, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        make()


@pytest.mark.parametrize(
    "tokens, error, words",
    [
        (torch.ones(2, 3), TypeError, "tokens: expected"),
        (torch.ones(3, dtype=torch.long), ValueError, r"tokens: expected shape \(B, L\)"),
        (torch.full((1, 2), V), ValueError, r"tokens: expected ids in \[0, V=11\)"),
        ([[1, 2]], TypeError, "tokens: expected"),
    ],
)
def test_bad_tokens_raise(tokens, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        _make(True, True)(tokens)


def test_pair_ids_needs_a_pair_table() -> None:
    with pytest.raises(ValueError, match="seen_pairs=None"):
        _make(False, True).pair_ids(torch.ones(1, 2, dtype=torch.long))


def test_pair_keys_are_int64_and_do_not_overflow_for_a_large_vocabulary() -> None:
    """In int32, previous * (V + 1) overflows from V = 46,341 on; the keys are computed in int64."""
    big = 50_000
    tokens = torch.tensor([[big - 1, big - 2]], dtype=torch.int32)
    keys = pair_keys(tokens, big)
    assert keys.dtype == torch.int64
    assert keys.tolist() == [[big * (big + 1) + big - 1, (big - 1) * (big + 1) + big - 2]]


@pytest.mark.parametrize(
    "tokens, vocab_size, error, words",
    [
        (torch.tensor([[1, -1]]), V, ValueError, r"tokens: expected ids in \[0, V=11\]"),
        (torch.tensor([[1, V + 1]]), V, ValueError, r"tokens: expected ids in \[0, V=11\]"),
        (torch.tensor([[1, 2]]), 0, ValueError, "vocab_size: expected a positive int"),
        (torch.tensor([[1, 2]]), 11.0, TypeError, "vocab_size: expected an int"),
    ],
)
def test_pair_keys_bad_arguments_raise(tokens, vocab_size, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        pair_keys(tokens, vocab_size)


def test_negative_ids_would_collide_so_they_are_refused() -> None:
    """Why the range check: the pair (2, -1) would get the key of the real pair (1, V): 2(V+1) - 1 = (V+1) + V."""
    assert 2 * (V + 1) - 1 == pair_keys(torch.tensor([[1, V]]), V)[0, 1]
    with pytest.raises(ValueError, match="tokens: expected ids"):
        pair_keys(torch.tensor([[2, -1]]), V)


def test_pair_ids_on_another_device_raise_a_clear_error() -> None:
    module = _make(True, False).to("meta")  # a device other than the CPU tokens', without needing a GPU
    with pytest.raises(ValueError, match=r"tokens: expected tokens on the module's device meta.*got tokens on cpu"):
        module.pair_ids(torch.ones(1, 2, dtype=torch.long))


@pytest.mark.parametrize("pairs", [True, False])
def test_a_float64_embedding_gets_float64_pairs_and_convolution(pairs: bool) -> None:
    embed = nn.Embedding(V, D, dtype=torch.float64)
    seen = pair_keys(torch.tensor([_sentences()[0]]), V)[0].unique() if pairs else None
    module = NeighbourEmbedding(embed, seen, conv=True, pad_id=PAD)
    assert module.conv.weight.dtype == torch.float64
    if pairs:
        assert module.pairs.weight.dtype == torch.float64
    out = module(_padded(_sentences()))
    assert out.dtype == torch.float64


def test_seen_pairs_is_saved_and_loaded_with_the_weights() -> None:
    module = _make(True, False)
    assert "seen_pairs" in module.state_dict()
    other = NeighbourEmbedding(nn.Embedding(V, D), module.seen_pairs + 1).double()  # same length, other pairs
    other.load_state_dict(module.state_dict())
    assert torch.equal(other.seen_pairs, module.seen_pairs)  # the table travels with the weights
    missing = {k: v for k, v in module.state_dict().items() if k != "seen_pairs"}
    with pytest.raises(RuntimeError, match="seen_pairs"):
        other.load_state_dict(missing)


def test_length_zero_with_the_convolution_raises() -> None:
    with pytest.raises(ValueError, match="at least one position"):
        _make(False, True)(torch.ones(2, 0, dtype=torch.long))


def test_left_padding_changes_the_first_tokens_pair() -> None:
    """Documented: padding invariance holds for right padding only; a left pad makes (pad, token) the first pair."""
    module = _make(True, True)
    s = _sentences()[0]
    alone = module(torch.tensor([s]))[0]
    left = module(torch.tensor([[PAD, PAD, *s]]))[0, 2:]
    assert module.pair_ids(torch.tensor([s]))[0, 0] != module.pair_ids(torch.tensor([[PAD, *s]]))[0, 1]
    assert (left - alone).abs().max() > 1e-3
