"""greedy_decode, beam_search, sample_next_token: stopping rules, cache equivalence, exhaustive-search check."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import pytest
import torch
from torch.testing import assert_close

from tformer.attention import KVCache
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
    # every finished hypothesis: k real tokens then EOS (k < max_len), 15 of them; the 16 sequences of max_len
    # real tokens are unfinished, and beam search returns a finished hypothesis whenever it has one
    hyps = [(*p, EOS) for k in range(max_len) for p in itertools.product((3, 4), repeat=k)]
    scores = [{h: _sequence_score(model, src[b : b + 1], h) for h in hyps} for b in range(2)]
    winners = set()
    for alpha in (0.0, 1.0, 3.0):
        out = beam_search(model, src, 32, max_len, BOS, EOS, length_penalty=alpha)  # 32 beams hold every prefix
        for b in range(2):
            best = max(hyps, key=lambda h: scores[b][h] / ((5 + len(h)) / 6) ** alpha)
            winners.add(best)
            row = out[b].tolist()
            assert row[: len(best)] == list(best) and all(t == PAD for t in row[len(best) :])
    assert len(winners) >= 3  # the length penalty really changes the answer
    greedy = tuple(greedy_decode(model, src[:1], max_len, BOS, EOS)[0].tolist())
    best_raw = max(hyps, key=lambda h: scores[0][h])
    greedy_score = _sequence_score(model, src[:1], greedy)  # greedy may end unfinished, outside ``hyps``
    assert scores[0][best_raw] > greedy_score + 0.1  # greedy misses the most probable sequence


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


def test_rope_models_are_not_capped_at_max_len() -> None:  # breaker 3: RoPE positions have no end
    torch.manual_seed(0)
    model = Transformer(23, 19, d_model=32, num_heads=4, num_encoder_layers=1, num_decoder_layers=1, d_ff=64,
                        dropout=0.0, max_len=16, pad_id=PAD, positional="rope").double().eval()
    with torch.no_grad():
        model.output.bias[EOS] = -1e3  # EOS never wins
    src = torch.randint(3, 23, (2, 20), generator=torch.Generator().manual_seed(1))  # S = 20 > max_len
    assert greedy_decode(model, src, 24, BOS, EOS).shape == (2, 24)
    assert torch.equal(greedy_decode(model, src, 24, BOS, EOS), greedy_decode(model, src, 24, BOS, EOS, use_cache=False))
    assert beam_search(model, src, 2, 20, BOS, EOS).shape == (2, 20)


def test_empty_batch_and_sample_next_token_argument_errors() -> None:
    model = _model(1.0)
    assert greedy_decode(model, _sources()[:0], 5, BOS, EOS).shape[0] == 0
    assert beam_search(model, _sources()[:0], 2, 5, BOS, EOS).shape[0] == 0
    with pytest.raises(ValueError, match=r"logits: expected shape \(B, V\), got \(5,\)"):
        sample_next_token(torch.randn(5), 1.0, top_k=2)
    with pytest.raises(TypeError, match=r"temperature: expected a number, got str"):
        sample_next_token(torch.randn(1, 5), "1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"temperature: expected a number >= 0, got nan"):
        sample_next_token(torch.randn(1, 5), float("nan"))


def test_an_out_of_vocabulary_bos_id_is_named() -> None:  # breaker MESSAGE: used to blame tgt_in
    model, src = _model(1.0), _sources()
    with pytest.raises(ValueError, match=r"bos_id: expected an id in the target vocabulary \[0, 19\), got 50"):
        greedy_decode(model, src, 5, 50, EOS)
    with pytest.raises(ValueError, match=r"bos_id: expected an id in the target vocabulary \[0, 19\), got -1"):
        beam_search(model, src, 2, 5, -1, EOS)


def test_sampling_at_temperature_extremes() -> None:  # breaker 9
    logits = torch.randn(2, 6, generator=torch.Generator().manual_seed(0)) * 5
    with pytest.raises(ValueError, match=r"temperature: expected a finite number >= 0, got inf"):
        sample_next_token(logits, float("inf"))
    assert torch.equal(sample_next_token(logits, 1e-40), logits.argmax(dim=-1))  # overflow: the argmax limit
    padded = logits.clone()
    padded[:, 0] = float("-inf")
    assert torch.equal(sample_next_token(padded, 1e-40, top_k=2), padded.argmax(dim=-1))
    huge = sample_next_token(padded, 1e300, generator=torch.Generator().manual_seed(0))  # uniform, never the -inf
    assert bool((huge != 0).all())
    gen_a, gen_b = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    by_hand = torch.multinomial(torch.softmax(logits / 0.7, dim=-1), 1, generator=gen_b).squeeze(-1)
    assert torch.equal(sample_next_token(logits, 0.7, generator=gen_a), by_hand)  # normal rows: unchanged


# --- issue 16: beam search keeps the finished hypotheses it finds --------------------------------------------

Table = Callable[[tuple[int, ...]], dict[int, float]]  # prefix (generated tokens, no BOS) -> next-token probs


class PrefixTable:
    """A stand-in model whose next-token distribution depends only on the prefix generated so far.

    Row b of ``src`` holds ``[i + 1]``: it is decoded with ``tables[i]``. The prefix is read back from the
    cache (the token ids are stored as its keys), so beam search's ``reorder_cache`` moves it with its beam.
    """

    pad_id = PAD

    def __init__(self, tables: list[Table], vocab: int) -> None:
        self.tables, self.vocab = tables, vocab

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        return (src[:, :1] - 1).double()[:, :, None]  # (B, 1, 1): which table

    def new_cache(self) -> list[KVCache]:
        return [KVCache()]

    def decode(self, tgt_in, memory, src_padding, cache=None):
        step = tgt_in[:, None, :, None].double()  # (N, 1, 1, 1)
        tokens = cache[0].update(step, step)[0][:, 0, :, 0].long()  # (N, t): BOS and the tokens so far
        logits = torch.full((len(tokens), 1, self.vocab), float("-inf"), dtype=torch.float64)
        for n, row in enumerate(tokens.tolist()):
            for token, p in self.tables[int(memory[n, 0, 0])](tuple(row[1:])).items():
                logits[n, 0, token] = math.log(p)
        return logits


A, F, B_, C, D = 3, 4, 5, 6, 7  # the issue's toy vocabulary (1 BOS, 2 EOS)


def _issue_toy(prefix: tuple[int, ...]) -> dict[int, float]:
    if prefix == ():
        return {A: 0.9, F: 0.1}
    if prefix == (F,):
        return {EOS: 1.0}
    if prefix == (A,):
        return {B_: 0.5, C: 0.5}
    if prefix[0] == A:
        return {EOS: 0.1, B_: 0.3, C: 0.3, D: 0.3}
    return {EOS: 1.0}  # prefixes the search never scores (after F, or filler beams with score -inf)


def _normalised(table: Table, tokens: tuple[int, ...], alpha: float) -> float:
    """Summed log probability of ``tokens`` under ``table``, over the GNMT penalty ((5 + |Y|) / 6)^α."""
    score = sum(math.log(table(tokens[:i]).get(t, 0.0) or 1e-300) for i, t in enumerate(tokens))
    return score / ((5 + len(tokens)) / 6) ** alpha


def _tokens(row: list[int]) -> tuple[int, ...]:
    return tuple(t for t in row if t != PAD)


def test_beam_search_keeps_a_finished_hypothesis_pushed_out_of_the_beam() -> None:
    """Issue 16: "F EOS" finishes at step 2 but ranks third; the live "A …" beams score better for a few steps,
    then never finish as well. The old search let them push "F EOS" out and returned 8 tokens with no EOS."""
    model, src = PrefixTable([_issue_toy], vocab=8), torch.tensor([[1]])
    for K in (2, 3):
        out = beam_search(model, src, K, 8, BOS, EOS, length_penalty=0.6)
        assert out.tolist() == [[F, EOS]]
        assert round(_normalised(_issue_toy, (F, EOS), 0.6), 2) == -2.10
    # the best 8-token continuation of "A" scores worse, finished or not
    assert _normalised(_issue_toy, (A, B_, B_, B_, B_, B_, B_, B_), 0.6) < -2.10
    assert _normalised(_issue_toy, (A, B_, EOS), 0.6) < -2.10
    # K = 1 is greedy: A, then 8 tokens without EOS. B, C and D tie after A, and argmax and topk may break the
    # tie differently, so compare scores here; the random tables below (no ties) compare tokens.
    greedy = _tokens(greedy_decode(model, src, 8, BOS, EOS)[0].tolist())
    beam1 = _tokens(beam_search(model, src, 1, 8, BOS, EOS, length_penalty=0.6)[0].tolist())
    assert len(greedy) == len(beam1) == 8 and EOS not in beam1 and beam1[0] == A
    assert _normalised(_issue_toy, beam1, 0.6) == pytest.approx(_normalised(_issue_toy, greedy, 0.6), abs=1e-12)


def _random_table(seed: int, real: tuple[int, ...], max_len: int) -> Table:
    """Next-token probabilities over ``real`` + EOS for every prefix of up to ``max_len`` real tokens, drawn
    from a softmax of Gaussian logits (scale 2, so some steps are confident and some are not)."""
    g = torch.Generator().manual_seed(seed)
    options = (*real, EOS)
    table = {}
    for n in range(max_len):
        for prefix in itertools.product(real, repeat=n):
            probs = torch.softmax(2.0 * torch.randn(len(options), generator=g, dtype=torch.float64), dim=0)
            table[prefix] = dict(zip(options, probs.tolist(), strict=True))
    return lambda prefix: table.get(prefix, {EOS: 1.0})


def _reference_beam(table: Table, K: int, max_len: int, alpha: float) -> tuple[list, list]:
    """The documented rule, in plain Python and without early stopping: every step, the best 2K − 1 extensions
    of the live beams form the pool; those ending in EOS are finished, the best K others live on.

    Returns (finished, live): lists of (tokens, score); a finished score is normalised, a live one is raw.
    """
    live: list[tuple[tuple[int, ...], float]] = [((), 0.0)]
    finished = []
    for step in range(1, max_len + 1):
        extensions = [((*p, t), s + math.log(q)) for p, s in live for t, q in table(p).items() if q > 0]
        pool = sorted(extensions, key=lambda c: -c[1])[: 2 * K - 1]
        finished += [(c, s / ((5 + step) / 6) ** alpha) for c, s in pool if c[-1] == EOS]
        live = [(c, s) for c, s in pool if c[-1] != EOS][:K]
    return finished, live


@pytest.mark.parametrize("seed", range(36))
def test_beam_search_returns_the_best_finished_hypothesis_it_generated(seed: int) -> None:
    real, max_len = (3, 4, 5), 4
    tables = [_random_table(100 * seed + b, real, max_len) for b in range(3)]
    model = PrefixTable(tables, vocab=6)
    src = torch.tensor([[1], [2], [3]])  # three rows, three tables, one batched search
    alpha = (0.0, 0.6, 1.5)[seed % 3]
    K = (1, 2, 3, 4)[seed % 4]
    out = beam_search(model, src, K, max_len, BOS, EOS, length_penalty=alpha)
    for b, table in enumerate(tables):
        got = _tokens(out[b].tolist())
        finished, live = _reference_beam(table, K, max_len, alpha)
        if finished:  # the best finished hypothesis of the whole search, early stopping notwithstanding
            expected, best = max(finished, key=lambda h: h[1])
            assert got == expected
            assert _normalised(table, got, alpha) == pytest.approx(best, abs=1e-12)
        else:  # no finished hypothesis: the best live beam at max_len, no EOS
            assert got == max(live, key=lambda h: h[1])[0] and EOS not in got
        # 64 beams hold every prefix (27 of length 3; a pool of 127 ≥ 4·27 extensions): the search is exhaustive
        every = [(*p, EOS) for n in range(max_len) for p in itertools.product(real, repeat=n)]
        optimum = max(every, key=lambda h: _normalised(table, h, alpha))
        wide = _tokens(beam_search(model, src[b : b + 1], 64, max_len, BOS, EOS, length_penalty=alpha)[0].tolist())
        assert wide == optimum
        assert _normalised(table, optimum, alpha) >= _normalised(table, got, alpha) - 1e-12 or EOS not in got


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_beam_size_one_is_greedy_on_random_tables(alpha: float) -> None:
    tables = [_random_table(7 + b, (3, 4, 5), 5) for b in range(12)]
    model, src = PrefixTable(tables, vocab=6), torch.arange(1, 13)[:, None]
    greedy = greedy_decode(model, src, 5, BOS, EOS)
    assert bool((greedy == EOS).any(dim=1).any()) and not bool((greedy == EOS).any(dim=1).all())
    assert torch.equal(beam_search(model, src, 1, 5, BOS, EOS, length_penalty=alpha), greedy)


def test_length_penalty_must_be_a_non_negative_number() -> None:
    model, src = PrefixTable([_issue_toy], vocab=8), torch.tensor([[1]])
    with pytest.raises(ValueError, match=r"length_penalty: expected a number >= 0, got -0.5"):
        beam_search(model, src, 2, 8, BOS, EOS, length_penalty=-0.5)
    with pytest.raises(ValueError, match=r"length_penalty: expected a finite number, got inf"):
        beam_search(model, src, 2, 8, BOS, EOS, length_penalty=float("inf"))  # every score 0 or -inf: no ranking
    with pytest.raises(TypeError, match=r"length_penalty: expected a number >= 0, got str"):
        beam_search(model, src, 2, 8, BOS, EOS, length_penalty="0.6")  # type: ignore[arg-type]
