"""greedy_decode, beam_search, sample_next_token: stopping rules, cache equivalence, exhaustive-search check."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch.testing import assert_close

from tformer.decoding import beam_search, greedy_decode, sample_next_token
from tformer.models import Transformer

PAD, BOS, EOS = 0, 1, 2


class Scripted:
    """A stand-in model whose row b emits tokens 3, 4, 3, 4, … and then EOS after as many tokens as it has
    real source tokens, so the expected output is known without running a network."""

    pad_id = PAD
    vocab = 5

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        return (src != PAD).sum(dim=1, keepdim=True).double()[:, :, None]  # (B, 1, 1): the stop length

    def new_cache(self) -> list[dict[str, int]]:
        return [{"seen": 0}]

    def decode(self, tgt_in, memory, src_padding, cache=None):
        if cache is None:
            generated = tgt_in.shape[1] - 1
        else:
            cache[0]["seen"] += tgt_in.shape[1]
            generated = cache[0]["seen"] - 1
        stop = memory[:, 0, 0].long()  # (B,)
        token = torch.where(generated >= stop, EOS, 3 + generated % 2)  # (B,)
        logits = torch.zeros(tgt_in.shape[0], tgt_in.shape[1], self.vocab, dtype=torch.float64)
        logits[torch.arange(len(token)), -1, token] = 1.0
        return logits


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_stops_each_row_at_its_own_eos(use_cache: bool) -> None:
    src = torch.tensor([[5, 5, 5, 0, 0], [5, 0, 0, 0, 0], [5, 5, 5, 5, 5]])  # stop after 3, 1, 5 tokens
    out = greedy_decode(Scripted(), src, max_len=8, bos_id=BOS, eos_id=EOS, use_cache=use_cache)
    expected = torch.tensor([[3, 4, 3, EOS, PAD, PAD], [3, EOS, PAD, PAD, PAD, PAD], [3, 4, 3, 4, 3, EOS]])
    assert torch.equal(out, expected)  # ends at the step where the last row finished (6 < max_len)
    capped = greedy_decode(Scripted(), src, max_len=4, bos_id=BOS, eos_id=EOS, use_cache=use_cache)
    assert torch.equal(capped, torch.tensor([[3, 4, 3, EOS], [3, EOS, PAD, PAD], [3, 4, 3, 4]]))


def _model(eos_bias: float, tgt_vocab: int = 19) -> Transformer:
    torch.manual_seed(0)
    model = Transformer(23, tgt_vocab, d_model=32, num_heads=4, num_encoder_layers=2, num_decoder_layers=2, d_ff=64,
                        dropout=0.0, max_len=16, pad_id=PAD).double().eval()
    with torch.no_grad():
        model.output.bias[EOS] = eos_bias  # make EOS likely enough that rows finish at different steps
    return model


def _sources() -> torch.Tensor:
    src = torch.randint(3, 23, (4, 9), generator=torch.Generator().manual_seed(1))
    for b, n in enumerate([9, 4, 6, 2]):
        src[b, n:] = PAD
    return src


def test_batched_greedy_equals_decoding_each_source_alone() -> None:
    model, src = _model(1.0), _sources()
    batched = greedy_decode(model, src, 12, BOS, EOS)
    assert torch.equal(batched, greedy_decode(model, src, 12, BOS, EOS, use_cache=False))
    finished = (batched == EOS).any(dim=1)
    assert bool(finished.any()) and not bool(finished.all())  # a mix of early stops and max_len rows
    for b in range(len(src)):
        alone = greedy_decode(model, src[b : b + 1, : int((src[b] != PAD).sum())], 12, BOS, EOS)
        n = alone.shape[1]
        assert torch.equal(batched[b, :n], alone[0])
        assert bool((batched[b, n:] == PAD).all())


def test_beam_size_one_equals_greedy() -> None:
    for eos_bias in (1.0, 2.0):
        model, src = _model(eos_bias), _sources()
        greedy = greedy_decode(model, src, 12, BOS, EOS)
        assert torch.equal(beam_search(model, src, 1, 12, BOS, EOS), greedy)
        assert torch.equal(model.beam_search(src, 1, 12, BOS, EOS, length_penalty=0.0), greedy)


def _sequence_score(model: Transformer, src: torch.Tensor, seq: tuple[int, ...]) -> float:
    """Sum of log-probabilities of ``seq`` under teacher forcing: an independent scorer for the beam test."""
    tgt_in = torch.tensor([[BOS, *seq[:-1]]])
    with torch.no_grad():
            log_probs = torch.log_softmax(model(src, tgt_in), dim=-1)[0]  # (L, V)
    return float(log_probs[torch.arange(len(seq)), torch.tensor(seq)].sum())


def test_wide_beam_finds_the_exhaustive_optimum_and_beats_greedy() -> None:
    model = _model(-2.0, tgt_vocab=5)  # real tokens 3, 4 plus EOS; PAD and BOS are never predicted
    with torch.no_grad():
        model.output.bias[PAD] = model.output.bias[BOS] = float("-inf")
    src, max_len = _sources()[:2], 4
    # every hypothesis: k real tokens then EOS (k < max_len), or max_len real tokens: 15 + 16 = 31
    hyps = [(*p, EOS) for k in range(max_len) for p in itertools.product((3, 4), repeat=k)]
    hyps += list(itertools.product((3, 4), repeat=max_len))
    scores = [{h: _sequence_score(model, src[b : b + 1], h) for h in hyps} for b in range(2)]
    winners = set()
    for alpha in (0.0, 1.0, 3.0):
        out = beam_search(model, src, 32, max_len, BOS, EOS, length_penalty=alpha)  # 32 beams hold all 31
        for b in range(2):
            best = max(hyps, key=lambda h: scores[b][h] / ((5 + len(h)) / 6) ** alpha)
            winners.add(best)
            row = out[b].tolist()
            assert row[: len(best)] == list(best) and all(t == PAD for t in row[len(best) :])
    assert len(winners) >= 3  # the length penalty really changes the answer
    greedy = tuple(greedy_decode(model, src[:1], max_len, BOS, EOS)[0].tolist())
    best_raw = max(hyps, key=lambda h: scores[0][h])
    assert scores[0][best_raw] > scores[0][greedy] + 0.1  # greedy misses the most probable sequence


def test_beam_search_rows_are_well_formed() -> None:
    out = beam_search(_model(1.0), _sources(), 4, 10, BOS, EOS)
    assert out.shape[0] == 4 and out.shape[1] <= 10
    for row in out.tolist():
        end = row.index(EOS) if EOS in row else len(row)
        assert PAD not in row[:end]
        assert all(t == PAD for t in row[end + 1 :])


def test_sample_next_token() -> None:
    logits = torch.tensor([[0.0, 1.0, 2.0, 0.5]]).repeat(20_000, 1)
    assert torch.equal(sample_next_token(logits[:2]), torch.tensor([2, 2]))
    g = torch.Generator().manual_seed(0)
    draws = sample_next_token(logits, temperature=2.0, generator=g)
    freq = torch.bincount(draws, minlength=4).double() / len(draws)
    assert_close(freq, torch.softmax(logits[0].double() / 2.0, dim=-1), atol=0.015, rtol=0.0)
    top2 = sample_next_token(logits, temperature=1.0, top_k=2, generator=g)
    assert set(top2.unique().tolist()) == {1, 2}
    with pytest.raises(ValueError, match="temperature"):
        sample_next_token(logits, temperature=-1.0)
    with pytest.raises(ValueError, match="top_k"):
        sample_next_token(logits, temperature=1.0, top_k=0)


def test_decoding_argument_errors() -> None:
    model, src = _model(1.0), _sources()
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(model, src, 0, 5, BOS, EOS)
    with pytest.raises(ValueError, match="max_len"):
        greedy_decode(model, src, 0, BOS, EOS)
    with pytest.raises(ValueError, match="src"):
        greedy_decode(model, src[0], 5, BOS, EOS)
    with pytest.raises(TypeError, match="eos_id"):
        greedy_decode(model, src, 5, BOS, "EOS")  # type: ignore[arg-type]


# --- regressions found by the hostile review ---------------------------------------------------------------


def _pad_loving_model() -> Transformer:
    model = _model(-1.0)
    with torch.no_grad():
        model.output.bias[PAD] = 3.0  # PAD becomes the argmax at some steps (as in an untrained model)
    return model


def test_pad_is_never_generated_and_cache_matches_recomputation() -> None:
    """PAD used to be emitted as a token; the teacher-forced decoder hides PAD keys but the cached one does
    not, so use_cache=True and False disagreed, and the output had PAD before its EOS."""
    model, src = _pad_loving_model(), _sources()
    reference = _pad_loving_model()
    with torch.no_grad():
        reference.output.bias[PAD] = float("-inf")  # the same model with PAD removed from the vocabulary
    cached = greedy_decode(model, src, 12, BOS, EOS)
    assert torch.equal(cached, greedy_decode(model, src, 12, BOS, EOS, use_cache=False))
    assert torch.equal(cached, greedy_decode(reference, src, 12, BOS, EOS))
    assert not bool((cached[:, 0] == PAD).any())  # the first token is real in every row
    for K in (1, 3):
        assert torch.equal(beam_search(model, src, K, 12, BOS, EOS), beam_search(reference, src, K, 12, BOS, EOS))


def test_special_ids_must_differ_from_pad_and_eos_must_be_in_vocabulary() -> None:
    model, src = _model(1.0), _sources()
    with pytest.raises(ValueError, match=r"eos_id: expected an id different from model.pad_id=0, got 0"):
        greedy_decode(model, src, 5, BOS, PAD)
    with pytest.raises(ValueError, match=r"bos_id: expected an id different from model.pad_id=0, got 0"):
        beam_search(model, src, 2, 5, PAD, EOS)
    with pytest.raises(ValueError, match=r"eos_id: expected an id in the target vocabulary \[0, 19\), got 50"):
        greedy_decode(model, src, 5, BOS, 50)  # used to run to max_len silently
    with pytest.raises(ValueError, match=r"eos_id: expected an id in the target vocabulary"):
        beam_search(model, src, 2, 5, BOS, 50)


def test_max_len_beyond_the_model_is_capped_not_a_mid_decode_crash() -> None:
    model, src = _model(-1e3), _sources()  # EOS never wins: every row runs to the cap
    assert model.max_len == 16
    out = greedy_decode(model, src, 40, BOS, EOS)  # used to fail at step 17 with "tgt_in: length 1 (+ 16 cached)"
    assert torch.equal(out, greedy_decode(model, src, 16, BOS, EOS))
    assert out.shape == (4, 16)
    assert beam_search(model, src, 2, 40, BOS, EOS).shape == (4, 16)


def test_empty_batch_and_sample_next_token_argument_errors() -> None:
    model = _model(1.0)
    assert greedy_decode(model, _sources()[:0], 5, BOS, EOS).shape[0] == 0
    assert beam_search(model, _sources()[:0], 2, 5, BOS, EOS).shape[0] == 0
    with pytest.raises(ValueError, match=r"logits: expected shape \(B, V\), got \(5,\)"):
        sample_next_token(torch.randn(5), 1.0, top_k=2)
    with pytest.raises(TypeError, match=r"temperature: expected a number >= 0, got str"):
        sample_next_token(torch.randn(1, 5), "1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"temperature: expected >= 0, got nan"):
        sample_next_token(torch.randn(1, 5), float("nan"))
