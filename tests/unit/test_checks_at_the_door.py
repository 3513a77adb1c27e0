"""Checks at the door: one forward of each family runs only its public entry's checks, however deep the stack.

Every shared check function of ``tformer._checks`` is replaced, in every module that imported it, by a counter;
one forward of each model family then counts how many checks ran. Inner layers trust their callers (issue 27),
so the count is the entry's own few checks and does not grow with the number of layers.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
import torch

import tformer
import tformer._checks as checks
from tformer import DecoderOnlyTransformer, EncoderOnlyTransformer, Seq2SeqRNN, Transformer
from tformer.decoding import sample_next_token
from tformer.variants import ModernDecoderLM

V = 13
# what each family's entry checks itself (check_tokens counts once and once more for each helper it calls:
# check_tensor and check_ids); causal_mask checks its two sizes
ENTRY_CHECKS = {
    "Transformer": 2 + 3 * 2 + 1,  # check_flags(return_attention) and its check_bool, check_tokens for src and
    # tgt_in (3 each), causal_mask's check_int L
    "DecoderOnlyTransformer": 2 + 3 + 2,  # the flag (2), check_tokens, causal_mask's check_int L and S
    "EncoderOnlyTransformer": 2 + 3,  # encode's flag (2), check_tokens
    "ModernDecoderLM": 2 + 3 + 2,  # the flag (2), check_tokens, causal_mask's check_int L and S
    "Seq2SeqRNN": 2 + 2 + 1 + 2,  # the flag (2), src: check_tensor + check_ids, the src_mask (default: none),
    # tgt_in: 2
}


def _build(family: str, layers: int) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    src = torch.randint(1, V, (2, 7))
    tgt = torch.randint(1, V, (2, 5))
    sizes = dict(d_model=16, num_heads=4, d_ff=32)
    if family == "Transformer":
        return Transformer(V, V, num_encoder_layers=layers, num_decoder_layers=layers, **sizes), (src, tgt)
    if family == "DecoderOnlyTransformer":
        return DecoderOnlyTransformer(V, num_layers=layers, **sizes), (tgt,)
    if family == "EncoderOnlyTransformer":
        return EncoderOnlyTransformer(V, num_layers=layers, **sizes), (tgt,)
    if family == "ModernDecoderLM":
        return ModernDecoderLM(V, num_layers=layers, num_kv_heads=2, max_len=32, **sizes), (tgt,)
    # the RNN encoder-decoder has one layer per side; its depth here is the target length it steps through
    return Seq2SeqRNN(V, V, 8, 16, attention="bahdanau"), (src, torch.randint(1, V, (2, 2 * layers)))


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Replace every ``tformer._checks.check_*`` wherever it was imported by a counting wrapper."""
    for info in pkgutil.walk_packages(tformer.__path__, "tformer."):
        importlib.import_module(info.name)
    originals = {id(getattr(checks, name)): name for name in checks.__all__ if name.startswith("check_")}
    counts: Counter[str] = Counter()
    wrappers: dict[int, Callable] = {}

    def wrap(fn: Callable, name: str) -> Callable:
        @functools.wraps(fn)
        def counting(*args: object, **kwargs: object) -> object:
            counts[name] += 1
            return fn(*args, **kwargs)

        return counting

    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith("tformer"):
            continue
        for attribute, value in list(vars(module).items()):
            if id(value) in originals:
                wrapper = wrappers.setdefault(id(value), wrap(value, originals[id(value)]))
                monkeypatch.setattr(module, attribute, wrapper)
    yield counts


@pytest.mark.parametrize("family", sorted(ENTRY_CHECKS))
def test_one_forward_runs_the_entry_checks_only(family: str, counted: Counter[str]) -> None:
    totals = []
    for layers in (2, 6):
        model, inputs = _build(family, layers)
        counted.clear()
        model(*inputs)
        totals.append(sum(counted.values()))
    assert totals[0] == totals[1], f"{family}: {totals[0]} checks at 2 layers, {totals[1]} at 6: {dict(counted)}"
    assert totals[1] <= ENTRY_CHECKS[family], f"{family}: {totals[1]} checks: {dict(counted)}"


def test_a_layer_called_alone_still_checks_its_input() -> None:
    layer = tformer.EncoderLayer(8, 2, 16)
    with pytest.raises(ValueError, match=r"x: expected shape \(B, \*, D=8\)"):
        layer(torch.zeros(2, 3, 6))


@pytest.mark.parametrize("family", sorted(ENTRY_CHECKS))
def test_every_module_still_runs_through_its_hooks(family: str) -> None:
    """Trusted calls go through ``nn.Module.__call__``: a forward hook on every submodule with parameters sees it run.

    Tracing (chapter 09's ShapeTrace) and FSDP's per-layer gathers (chapter 15) rely on those hooks; calling a
    layer's unchecked body directly, as an earlier version of this change did, skips them.
    """
    model, inputs = _build(family, 2)
    ran: set[str] = set()
    for name, module in model.named_modules():
        if name and not isinstance(module, torch.nn.ModuleList):
            module.register_forward_hook(lambda m, args, out, name=name: ran.add(name))
    model(*inputs)
    unused = {"pooler", "pooler.0", "pooler.1", "classifier"}  # EncoderOnlyTransformer's heads: not in forward
    expected = {name for name, m in model.named_modules() if name and not isinstance(m, torch.nn.ModuleList)}
    assert expected - unused - ran == set(), f"{family}: hooks never ran on {sorted(expected - unused - ran)}"


def _owned(model: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    return [(n, m) for n, m in model.named_modules() if isinstance(m, (tformer.EncoderLayer, tformer.DecoderLayer))]


def test_a_module_owned_by_a_model_still_checks_when_a_reader_calls_it() -> None:
    """Trust is per call: the decoder of a model, called directly with a memory of another batch, refuses it."""
    model = Transformer(V, V, d_model=16, num_heads=4, num_encoder_layers=1, num_decoder_layers=1, d_ff=32)
    y, memory = torch.randn(2, 3, 16), torch.randn(1, 5, 16)
    for call in (lambda: model.decoder(y, memory), lambda: model.decoder.layers[0](y, memory),
                 lambda: model.decoder.layers[0].cross_attn(y, memory, memory)):  # fmt: skip
        with pytest.raises(ValueError, match=r"B=2"):
            call()
    with pytest.raises(TypeError, match=r"^x: expected a floating-point"):
        model.positional(torch.zeros(2, 3, 16, dtype=torch.long))


def test_a_shared_rope_still_checks_when_called_alone() -> None:
    rope = tformer.RotaryEmbedding(8)
    tformer.MultiHeadAttention(16, 2, rope=rope)
    with pytest.raises(ValueError, match=r"^positions: expected shape \(L=5,\)"):
        rope(torch.randn(1, 2, 5, 8), torch.tensor([3]))


def test_decode_checks_the_memory_dtype_and_the_cache_count() -> None:
    model = Transformer(V, V, d_model=16, num_heads=4, num_encoder_layers=1, num_decoder_layers=2, d_ff=32)
    tgt, memory = torch.randint(1, V, (2, 3)), torch.randn(2, 5, 16)
    with pytest.raises(TypeError, match=r"^memory: expected"):
        model.decode(tgt, memory.double())
    for cache in (model.new_cache()[:1], model.new_cache() * 2):
        with pytest.raises(ValueError, match=r"^cache: expected one \(self, cross\) KVCache pair per layer"):
            model.decode(tgt, memory, cache=cache)


def _causal_models() -> list[torch.nn.Module]:
    return [
        DecoderOnlyTransformer(V, d_model=16, num_heads=4, num_layers=2, d_ff=32).eval(),
        ModernDecoderLM(V, 16, 4, 2, 2, 32, max_len=32).eval(),
    ]


@pytest.mark.parametrize("model", _causal_models(), ids=["gpt", "modern"])
def test_one_cache_listed_for_two_layers_is_refused(model: torch.nn.Module) -> None:
    """Layer 1 would append its keys to layer 0's cache: the stack refuses the list at the door."""
    shared = model.new_cache()[0]
    with pytest.raises(ValueError, match=r"^cache: expected .*each cache its own object, got one object at layers 0 and 1"):
        model(torch.randint(1, V, (1, 3)), cache=[shared, shared])


@pytest.mark.parametrize("model", _causal_models(), ids=["gpt", "modern"])
def test_caches_of_different_lengths_are_refused(model: torch.nn.Module) -> None:
    """The stack reads the past length from layer 0; a layer 1 cache that holds more positions is refused."""
    ahead = model.new_cache()
    model(torch.randint(1, V, (1, 3)), cache=ahead)
    cache = [model.new_cache()[0], ahead[1]]
    cache[0].update(*(t[..., :2, :] for t in (ahead[0].key, ahead[0].value)))  # layer 0 holds 2 positions, layer 1 holds 3
    with pytest.raises(ValueError, match=r"^cache: expected .*keys of one shape, got \(1, \d, 2, 4\) at layer 0 and \(1, \d, 3, 4\) at layer 1"):
        model(torch.randint(1, V, (1, 1)), cache=cache)


def test_the_encoder_decoder_cache_pairs_must_be_distinct() -> None:
    model = Transformer(V, V, d_model=16, num_heads=4, num_encoder_layers=1, num_decoder_layers=2, d_ff=32)
    tgt, memory = torch.randint(1, V, (2, 3)), torch.randn(2, 5, 16)
    pair = model.new_cache()[0]
    with pytest.raises(ValueError, match=r"got one object at layers 0 and 1"):
        model.decode(tgt, memory, cache=[pair, pair])


def test_generate_checks_the_sampling_arguments_once() -> None:
    """generate checks temperature/top-k/top-p once; each token is then drawn by the unchecked sampler."""
    model = _causal_models()[0]
    counts: Counter[str] = Counter()
    original = checks.check_sampling

    def counting(*args: object, **kwargs: object) -> None:
        counts["check_sampling"] += 1
        original(*args, **kwargs)  # type: ignore[arg-type]

    import tformer.decoding as decoding

    decoding.check_sampling, saved = counting, decoding.check_sampling  # type: ignore[assignment]
    try:
        model.generate(torch.randint(1, V, (2, 2)), 6, temperature=0.8, top_k=5, top_p=0.9, generator=torch.Generator().manual_seed(0))
    finally:
        decoding.check_sampling = saved  # type: ignore[assignment]
    assert counts["check_sampling"] == 1


def test_sample_next_token_refuses_an_empty_vocabulary() -> None:
    with pytest.raises(ValueError, match=r"^logits: expected at least one token .* got V = 0"):
        sample_next_token(torch.zeros(2, 0), temperature=1.0)


@pytest.mark.parametrize("name, bos, eos", [("bos_id", 99, 2), ("eos_id", 1, 99), ("bos_id", -1, 2)])
def test_seq2seq_rnn_greedy_decode_range_checks_bos_and_eos(name: str, bos: int, eos: int) -> None:
    """An out-of-range BOS used to fail inside the embedding, and an out-of-range EOS never stopped a row."""
    model = Seq2SeqRNN(V, V, 8, 10, pad_id=0)
    with pytest.raises(ValueError, match=rf"^{name}: expected an id in the target vocabulary \[0, {V}\), got {bos if name == 'bos_id' else eos}"):
        model.greedy_decode(torch.randint(1, V, (2, 4)), 5, bos, eos)


def test_decode_refuses_a_cache_from_another_batch_or_memory() -> None:
    """decode trusts its stack with the cache, so it checks the cache against the input and the memory itself."""
    from tformer.attention import KVCache

    model = Transformer(V, V, d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=2, d_ff=32).eval()
    y2, memory2 = torch.randint(1, V, (2, 1)), torch.randn(2, 4, 16)
    filled = model.new_cache()
    model.decode(y2, memory2, cache=filled)
    mixed = [(KVCache(), pair[1]) for pair in filled]  # fresh self caches, cross caches filled with B = 2
    with pytest.raises(ValueError, match=r"^cache\[0\]: expected a cache filled with B=1 rows"):
        model.decode(y2[:1], memory2[:1], cache=mixed)
    with pytest.raises(ValueError, match=r"^cache\[0\]: expected a cross-attention cache filled from a memory of S=6"):
        model.decode(torch.randint(1, V, (2, 1)), torch.randn(2, 6, 16), cache=[(KVCache(), p[1]) for p in filled])


@pytest.mark.parametrize("model", _causal_models(), ids=["gpt", "modern"])
def test_a_static_cache_in_self_attention_is_refused(model: torch.nn.Module) -> None:
    from tformer.attention import KVCache

    with pytest.raises(ValueError, match=r"^cache\[0\]: expected a growing \(self-attention\) KVCache"):
        model(torch.randint(1, V, (1, 2)), cache=[KVCache(static=True), KVCache(static=True)])


def test_cache_entries_of_the_wrong_type_name_their_index() -> None:
    model = Transformer(V, V, d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=2, d_ff=32).eval()
    gpt = _causal_models()[0]
    tgt, memory = torch.randint(1, V, (1, 1)), torch.randn(1, 4, 16)
    for cache in (gpt.new_cache(), [None, None], [(1, 2, 3), (1, 2, 3)]):
        with pytest.raises(TypeError, match=r"^cache\[0\]: expected one \(self, cross\) KVCache pair"):
            model.decode(tgt, memory, cache=cache)
    with pytest.raises(TypeError, match=r"^cache\[0\]: expected"):
        gpt(torch.randint(1, V, (1, 1)), cache=model.new_cache())


def test_sampling_refuses_nan_logits_and_a_bad_generator() -> None:
    for logits in (torch.tensor([[0.0, float("nan")]]), torch.full((1, 3), float("-inf"))):
        for temperature in (0.0, 1.0):
            with pytest.raises(ValueError, match=r"^logits: expected no NaN and at least one finite logit per row"):
                sample_next_token(logits, temperature)
    with pytest.raises(TypeError, match=r"^generator: expected Generator, got int"):
        sample_next_token(torch.zeros(1, 3), 1.0, generator=5)  # type: ignore[arg-type]
    model = _causal_models()[0]
    with torch.no_grad():
        model.output.bias.fill_(float("nan"))  # a model that diverged: generate stops with an error, not token 0
    with pytest.raises(ValueError, match=r"^logits: expected no NaN"):
        model.generate(torch.randint(1, V, (1, 2)), 3)
