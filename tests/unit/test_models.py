"""The three families and their configs: shared defaults, round trips, shapes, invariants, KV cache, errors."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from tformer.attention import KVCache
from tformer.layers import FeedForward
from tformer.models import (
    LEARNED_POSITION_STD,
    DecoderOnlyConfig,
    DecoderOnlyTransformer,
    EncoderOnlyConfig,
    EncoderOnlyTransformer,
    ModelConfig,
    Transformer,
    TransformerConfig,
    TransformerOutput,
    init_weights,
)
from tformer.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding

B, S, L, D, H, FF, V_SRC, V_TGT, PAD = 3, 7, 5, 32, 4, 64, 23, 19, 0
TOL = {"atol": 1e-10, "rtol": 1e-10}


def _model(norm_first: bool = False, dropout: float = 0.0, vocab: int | None = None, **kwargs) -> Transformer:
    torch.manual_seed(0)
    return Transformer(V_SRC, vocab or V_TGT, d_model=D, num_heads=H, num_encoder_layers=2, num_decoder_layers=2, d_ff=FF,
                       dropout=dropout, max_len=16, pad_id=PAD, norm_first=norm_first, **kwargs).double().eval()


def _tokens(vocab: int, *shape: int, seed: int) -> torch.Tensor:
    return torch.randint(1, vocab, shape, generator=torch.Generator().manual_seed(seed))


def test_forward_shapes_and_attention_maps() -> None:
    model = _model()
    src, tgt_in = _tokens(V_SRC, B, S, seed=1), _tokens(V_TGT, B, L, seed=2)
    src[1, 4:] = PAD
    assert model(src, tgt_in).shape == (B, L, V_TGT)
    out = model(src, tgt_in, return_attention=True)
    assert isinstance(out, TransformerOutput)
    assert_close(out.logits, model(src, tgt_in), **TOL)
    assert [w.shape for w in out.encoder_attention] == [(B, H, S, S)] * 2
    assert [w.shape for w in out.decoder_self_attention] == [(B, H, L, L)] * 2
    assert [w.shape for w in out.cross_attention] == [(B, H, L, S)] * 2
    assert_close(out.cross_attention[0].sum(-1), torch.ones(B, H, L, dtype=torch.float64), **TOL)
    assert bool((out.cross_attention[1][1, :, :, 4:] == 0).all())  # padded source is never read


@pytest.mark.parametrize("norm_first", [False, True])
def test_future_target_tokens_do_not_change_earlier_logits(norm_first: bool) -> None:
    model = _model(norm_first)
    src, tgt_in = _tokens(V_SRC, B, S, seed=1), _tokens(V_TGT, B, L, seed=2)
    changed = tgt_in.clone()
    changed[:, 3:] = _tokens(V_TGT, B, L - 3, seed=3)
    before, after = model(src, tgt_in), model(src, changed)
    assert_close(after[:, :3], before[:, :3], **TOL)
    assert not torch.allclose(after[:, 3:], before[:, 3:])


def test_padding_the_source_leaves_logits_unchanged() -> None:
    model = _model()
    src, tgt_in = _tokens(V_SRC, B, S, seed=1), _tokens(V_TGT, B, L, seed=2)
    src[0, 5:] = PAD
    padded = torch.cat([src, torch.full((B, 4), PAD)], dim=1)  # four more padding columns
    assert_close(model(padded, tgt_in), model(src, tgt_in), **TOL)
    # whatever the encoder left at padded positions is never read by the decoder
    memory = model.encode(src)
    noisy = memory.clone()
    noisy[0, 5:] = 1e3
    keep = src != PAD
    assert_close(model.decode(tgt_in, noisy, keep), model.decode(tgt_in, memory, keep), **TOL)


def test_eval_is_deterministic_with_dropout() -> None:
    model = _model(dropout=0.3)
    src, tgt_in = _tokens(V_SRC, B, S, seed=1), _tokens(V_TGT, B, L, seed=2)
    assert torch.equal(model(src, tgt_in), model(src, tgt_in))
    model.train()
    assert not torch.equal(model(src, tgt_in), model(src, tgt_in))


def test_cached_decoder_steps_equal_the_full_forward() -> None:
    model = _model(norm_first=True)
    src, tgt_in = _tokens(V_SRC, B, S, seed=1), _tokens(V_TGT, B, L, seed=2)
    src[2, 3:] = PAD
    full = model(src, tgt_in)
    memory, keep, cache = model.encode(src), src != PAD, model.new_cache()
    chunks = [model.decode(tgt_in[:, :2], memory, keep, cache=cache)]  # a 2-token prefix, then one at a time
    chunks += [model.decode(tgt_in[:, t : t + 1], memory, keep, cache=cache) for t in range(2, L)]
    assert_close(torch.cat(chunks, dim=1), full, **TOL)


def test_parameter_count_closed_form_and_tied_embeddings() -> None:
    model = _model()
    attn = 4 * D * D + 4 * D
    ffn = 2 * D * FF + FF + D
    norm = 2 * D
    expected = (V_SRC + V_TGT) * D + 2 * (attn + ffn + 2 * norm) + 2 * (2 * attn + ffn + 3 * norm)
    expected += D * V_TGT + V_TGT  # output projection
    assert sum(p.numel() for p in model.parameters()) == expected
    tied = _model(tie_embeddings=True)
    assert tied.output.weight is tied.tgt_embed.weight
    assert sum(p.numel() for p in tied.parameters()) == expected - D * V_TGT


def test_xavier_initialisation_scale() -> None:
    model = _model()
    bound = (6 / (V_TGT + D)) ** 0.5  # Glorot & Bengio 2010: U(-b, b), b = √(6 / (fan_in + fan_out))
    w = model.tgt_embed.weight.detach()
    assert float(w.abs().max()) <= bound and float(w.abs().max()) > 0.8 * bound
    assert_close(w.std().item(), bound / 3**0.5, atol=0.1 * bound, rtol=0.0)
    torch.manual_seed(0)
    default = Transformer(V_SRC, V_TGT, d_model=D, num_heads=H, num_encoder_layers=1, num_decoder_layers=1, d_ff=FF,
                          init="torch")
    assert float(default.tgt_embed.weight.detach().std()) > 0.9  # PyTorch's N(0, 1) default for embeddings
    with pytest.raises(ValueError, match="scheme"):
        init_weights(model, "kaiming")  # type: ignore[arg-type]


def test_bad_inputs_raise_naming_the_argument() -> None:
    model = _model()
    src, tgt_in = _tokens(V_SRC, B, S, seed=1), _tokens(V_TGT, B, L, seed=2)
    with pytest.raises(ValueError, match=r"^d_model: expected a multiple of num_heads=4, got 30$"):
        Transformer(V_SRC, V_TGT, d_model=30, num_heads=4)
    with pytest.raises(ValueError, match=r"src: expected a length L in \[1, max_len=16\], got 17"):
        model(_tokens(V_SRC, B, 17, seed=3), tgt_in)
    with pytest.raises(ValueError, match=r"tgt_in: expected a length L in \[1, max_len=16\], got 17"):
        model(src, _tokens(V_TGT, B, 17, seed=3))
    with pytest.raises(ValueError, match=r"src: expected ids in \[0, V=23\), got min 24, max 45"):
        model(src + V_SRC, tgt_in)
    with pytest.raises(ValueError, match="tgt_in"):
        model(src, tgt_in - 10)
    with pytest.raises(TypeError, match="src"):
        model(src.double(), tgt_in)
    with pytest.raises(ValueError, match="src"):
        model(src[0], tgt_in)


# ---------------------------------------------------------------- decoder-only


def _lm(positional: str, **kwargs) -> DecoderOnlyTransformer:
    torch.manual_seed(0)
    settings = dict(d_model=D, num_heads=H, num_layers=2, d_ff=FF, max_len=24, dropout=0.0, positional=positional)
    return DecoderOnlyTransformer(V_TGT, **{**settings, **kwargs}).double().eval()


@pytest.mark.parametrize("positional", ["learned", "sinusoidal", "rope"])
def test_generate_with_and_without_cache_is_identical(positional: str) -> None:
    model = _lm(positional)
    prompt = _tokens(V_TGT, 2, 5, seed=1)
    cached = model.generate(prompt, 15)
    assert cached.shape == (2, 20) and torch.equal(cached[:, :5], prompt)
    assert torch.equal(cached, model.generate(prompt, 15, use_cache=False))
    # the cached forward, one token at a time, gives the full forward's logits
    full = model(cached)
    cache = model.new_cache()
    steps = [model(cached[:, :5], cache=cache)] + [model(cached[:, t : t + 1], cache=cache) for t in range(5, 20)]
    assert_close(torch.cat(steps, dim=1), full, **TOL)


@pytest.mark.parametrize("positional", ["learned", "rope"])
def test_decoder_only_is_causal(positional: str) -> None:
    model = _lm(positional)
    tokens = _tokens(V_TGT, B, 9, seed=1)
    changed = tokens.clone()
    changed[:, 6] = (changed[:, 6] + 1) % V_TGT
    assert_close(model(changed)[:, :6], model(tokens)[:, :6], **TOL)


def test_sampling_is_reproducible_and_top_k_one_is_greedy() -> None:
    model = _lm("learned")
    prompt = _tokens(V_TGT, 2, 3, seed=1)
    sample = lambda seed, **kw: model.generate(prompt, 8, temperature=1.0,  # noqa: E731
                                               generator=torch.Generator().manual_seed(seed), **kw)
    assert torch.equal(sample(5), sample(5))
    assert torch.equal(sample(5, top_k=1), model.generate(prompt, 8))


def test_generate_and_forward_errors() -> None:
    model = _lm("learned")
    with pytest.raises(ValueError, match="max_new_tokens: expected a non-negative int, got -1"):
        model.generate(_tokens(V_TGT, 1, 20, seed=1), -1)
    with pytest.raises(ValueError, match=r"tokens.*max_len=24"):
        model(_tokens(V_TGT, 1, 25, seed=1))
    with pytest.raises(ValueError, match=r"tokens: expected ids in \[0, V=\d+\), got min"):
        model(torch.full((1, 3), V_TGT))
    with pytest.raises(ValueError, match="positional"):
        _lm("relative")


# ---------------------------------------------------------------- encoder-only


def _bert(**kwargs) -> EncoderOnlyTransformer:
    torch.manual_seed(0)
    return EncoderOnlyTransformer(V_SRC, d_model=D, num_heads=H, num_layers=2, d_ff=FF, max_len=16, pad_id=PAD,
                                  dropout=0.0, **kwargs).double().eval()


def test_encoder_only_is_bidirectional_and_ignores_padding() -> None:
    model = _bert(num_classes=3)
    tokens = _tokens(V_SRC, B, S, seed=1)
    tokens[1, 5:] = PAD
    logits = model(tokens)
    assert logits.shape == (B, S, V_SRC) and model.classify(tokens).shape == (B, 3)
    changed = tokens.clone()
    changed[:, 4] = (changed[:, 4] % (V_SRC - 1)) + 1  # a later, non-pad token
    assert not torch.allclose(model(changed)[:, 0], logits[:, 0])  # the first position sees the future
    padded = torch.cat([tokens, torch.full((B, 3), PAD)], dim=1)
    assert_close(model(padded)[:, :S], logits, **TOL)
    hidden, weights = model.encode(tokens, return_attention=True)
    assert hidden.shape == (B, S, D) and weights[0].shape == (B, H, S, S)


def test_encoder_only_without_head_cannot_classify() -> None:
    with pytest.raises(ValueError, match="num_classes"):
        _bert().classify(_tokens(V_SRC, B, S, seed=1))


# --- regressions found by the hostile review ---------------------------------------------------------------


def _tiny(**kwargs: object) -> Transformer:
    sizes = dict(d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, d_ff=32, dropout=0.0)
    return Transformer(V_SRC, V_TGT, **{**sizes, **kwargs}).eval()  # type: ignore[arg-type]


SMALL = dict(d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=8)  # one-stack families


def test_constructor_sizes_and_pad_id_are_validated() -> None:
    with pytest.raises(ValueError, match=r"num_heads: expected a positive int, got 0"):
        _tiny(num_heads=0)  # was ZeroDivisionError
    with pytest.raises(ValueError, match=r"max_len: expected a positive int, got 0"):
        _tiny(max_len=0)
    with pytest.raises(TypeError, match=r"src_vocab_size: expected an int, got float"):
        Transformer(10.0, 10)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"pad_id: expected an id in \[0, 19\)"):
        _tiny(pad_id=V_TGT)  # PAD outside the target vocabulary: greedy_decode would emit an invalid id
    with pytest.raises(ValueError, match=r"vocab_size: expected a positive int, got 0"):
        DecoderOnlyTransformer(0, **SMALL)
    with pytest.raises(ValueError, match=r"max_len: expected a positive int, got 0"):
        DecoderOnlyTransformer(10, **{**SMALL, "max_len": 0})
    with pytest.raises(ValueError, match=r"pad_id: expected an id in \[0, 10\)"):
        EncoderOnlyTransformer(10, **SMALL, pad_id=99)
    with pytest.raises(ValueError, match=r"num_classes: expected a positive int, got 0"):
        EncoderOnlyTransformer(10, **SMALL, num_classes=0)


def test_token_dtype_batch_and_memory_errors() -> None:
    model = _tiny()
    src, tgt = torch.tensor([[1, 2, 3]]), torch.tensor([[1, 2]])
    with pytest.raises(TypeError, match=r"src: expected dtype torch.int64 or torch.int32, got torch.uint8"):
        model(src.to(torch.uint8), tgt)  # was an obscure error from inside nn.Embedding
    with pytest.raises(ValueError, match=r"src, tgt_in: expected one batch size B"):
        model(src.repeat(2, 1), tgt.repeat(3, 1))
    memory = model.encode(src)
    with pytest.raises(ValueError, match=r"memory: expected shape \(B=2, S, D=\d+\), got \(1, 3, \d+\)"):
        model.decode(tgt.repeat(2, 1), memory)
    with pytest.raises(ValueError, match=r"src_padding: expected shape \(B=1, S=3\), got \(3,\)"):
        model.decode(tgt, memory, torch.ones(3, dtype=torch.bool))
    assert model(src.int(), tgt.int()).shape == (1, 2, V_TGT)


def test_empty_batch_runs_instead_of_crashing() -> None:
    empty = torch.zeros(0, 3, dtype=torch.long)
    assert _tiny()(empty, empty).shape == (0, 3, V_TGT)  # was "min(): Expected reduction dim ..."
    assert DecoderOnlyTransformer(10, **SMALL)(empty).shape == (0, 3, 10)
    assert EncoderOnlyTransformer(10, **SMALL)(empty).shape == (0, 3, 10)


def test_generate_argument_types() -> None:
    model = DecoderOnlyTransformer(10, **SMALL).eval()
    with pytest.raises(TypeError, match=r"prompt: expected an integer tensor .* got list"):
        model.generate([[1, 2]], 2)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"max_new_tokens: expected an int, got float"):
        model.generate(torch.tensor([[1, 2]]), 2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"temperature: expected a number >= 0, got nan"):
        model.generate(torch.tensor([[1, 2]]), 2, temperature=float("nan"))
    with pytest.raises(ValueError, match=r"temperature: expected a finite number >= 0, got inf"):
        model.generate(torch.tensor([[1, 2]]), 2, temperature=float("inf"))  # breaker 9: used to give NaN probs
    with pytest.raises(ValueError, match=r"^prompt: expected a length L >= 1, got 0$"):  # breaker MESSAGE: no "None"
        model.generate(torch.zeros(1, 0, dtype=torch.long), 2)
    with pytest.raises(ValueError, match=r"^tokens: expected a length L in \[1, max_len=16\], got 0$"):
        DecoderOnlyTransformer(10, **{**SMALL, "max_len": 16})(torch.zeros(1, 0, dtype=torch.long))


# ---------------------------------------------------------------- issue 16 §2: tying, RoPE, generate past max_len


@pytest.mark.parametrize("family", ["decoder-only", "encoder-decoder"])
def test_tied_output_shares_the_target_embedding_storage(family: str) -> None:
    # Press & Wolf 2017: one V x D matrix embeds the target tokens and scores them
    def build(tie: bool) -> torch.nn.Module:
        torch.manual_seed(0)
        if family == "decoder-only":
            return _lm("learned", tie_embeddings=tie)
        return _model(tie_embeddings=tie)

    untied, tied = build(False), build(True)
    embed = tied.body.embed if family == "decoder-only" else tied.tgt_embed
    assert tied.output.weight.data_ptr() == embed.weight.data_ptr()
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(untied) - count(tied) == V_TGT * D
    with torch.no_grad():
        embed.weight[3].add_(1.0)  # a change through the embedding is a change of the output layer
    assert_close(tied.output.weight[3], embed.weight[3], atol=0.0, rtol=0.0)
    assert untied.output.weight.data_ptr() != (untied.body.embed if family == "decoder-only"
                                               else untied.tgt_embed).weight.data_ptr()


def test_learned_positions_keep_their_documented_init_inside_a_model() -> None:
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(V_TGT, d_model=64, num_heads=4, num_layers=1, d_ff=64, max_len=256,
                                   positional="learned")
    table = model.body.positional.embedding.weight.detach()  # (256, 64): 16,384 draws
    assert LEARNED_POSITION_STD == 2**-0.5
    assert abs(float(table.std()) - 2**-0.5) < 0.02  # N(0, 1/2); Xavier would give √(2/320) ≈ 0.079
    assert abs(float(table.mean())) < 0.02
    alone = LearnedPositionalEmbedding(256, 64).embedding.weight.detach()  # the module's own default: GPT-2's
    assert abs(float(alone.std()) - 0.02) < 0.001
    bound = (6 / (V_TGT + 64)) ** 0.5  # the token embedding next to it is still Xavier-uniform
    assert float(model.body.embed.weight.detach().abs().max()) <= bound


def _nano_gpt_generate(model: DecoderOnlyTransformer, prompt: torch.Tensor, steps: int, window: int | None):
    """Reference: recompute the last ``window`` tokens every step, no cache (nanoGPT's ``generate``)."""
    tokens = prompt
    for _ in range(steps):
        logits = model(tokens if window is None else tokens[:, -window:])[:, -1]  # (B, V)
        logits[:, PAD] = float("-inf")
        tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], dim=1)
    return tokens


@pytest.mark.parametrize("positional", ["learned", "sinusoidal"])
def test_generate_past_max_len_crops_the_context_for_absolute_positions(positional: str) -> None:
    model = _lm(positional, max_len=8)
    prompt = _tokens(V_TGT, 2, 5, seed=1)
    out = model.generate(prompt, 12)  # 17 tokens, more than max_len = 8
    assert out.shape == (2, 17)
    assert torch.equal(out, _nano_gpt_generate(model, prompt, 12, window=8))
    assert torch.equal(out, model.generate(prompt, 12, use_cache=False))
    long_prompt = _tokens(V_TGT, 2, 11, seed=2)  # a prompt longer than max_len is cropped as well
    assert torch.equal(model.generate(long_prompt, 3), _nano_gpt_generate(model, long_prompt, 3, window=8))


def test_generate_past_max_len_keeps_the_whole_context_for_rope() -> None:
    model = _lm("rope", max_len=8)
    prompt = _tokens(V_TGT, 2, 5, seed=1)
    out = model.generate(prompt, 12)
    assert torch.equal(out, _nano_gpt_generate(model, prompt, 12, window=None))  # nothing cropped
    assert torch.equal(out, model.generate(prompt, 12, use_cache=False))
    assert not torch.equal(out, _nano_gpt_generate(model, prompt, 12, window=8))  # cropping would differ


def test_generate_never_emits_padding_and_refuses_a_padded_prompt() -> None:
    model = _lm("learned")
    with torch.no_grad():
        model.output.bias[PAD] = 1e3  # PAD would win every argmax
    assert not bool((model.generate(_tokens(V_TGT, 2, 3, seed=1), 6)[:, 3:] == PAD).any())
    with pytest.raises(ValueError, match=r"prompt: expected no padding \(pad_id=0\)"):
        model.generate(torch.tensor([[PAD, 3, 4]]), 2)


def test_rope_encoder_decoder_rotates_self_attention_only() -> None:
    model = _model(norm_first=True, positional="rope")
    assert all(layer.self_attn.rope is not None for layer in [*model.encoder.layers, *model.decoder.layers])
    assert all(layer.cross_attn.rope is None for layer in model.decoder.layers)
    src, tgt_in = _tokens(V_SRC, B, S, seed=1), _tokens(V_TGT, B, L, seed=2)
    full = model(src, tgt_in)
    memory, keep, cache = model.encode(src), src != PAD, model.new_cache()
    steps = [model.decode(tgt_in[:, t : t + 1], memory, keep, cache=cache) for t in range(L)]
    assert_close(torch.cat(steps, dim=1), full, **TOL)


def test_rope_in_cross_attention_is_refused_even_when_lengths_match() -> None:
    from tformer.attention import MultiHeadAttention
    from tformer.positional import RotaryEmbedding

    attn = MultiHeadAttention(D, H, rope=RotaryEmbedding(D // H)).double()
    x, memory = torch.randn(B, L, D, dtype=torch.float64), torch.randn(B, L, D, dtype=torch.float64)  # S == L
    assert attn(x, x, x)[0].shape == (B, L, D)
    with pytest.raises(ValueError, match=r"rope: expected self-attention \(key is query\)"):
        attn(x, memory, memory)


# ---------------------------------------------------------------- configs: one per family, shared defaults

SHARED = [f.name for f in dataclasses.fields(ModelConfig)]
V = 11  # vocabulary of the config tests


def _stacks(model: nn.Module) -> list[nn.Module]:
    return [model.encoder, model.decoder] if isinstance(model, Transformer) else [model.body.encoder]


def _built_settings(model: nn.Module) -> dict[str, object]:
    """What a built model actually does, read from its modules (not from its config)."""
    stacks = _stacks(model)
    layers = [layer for stack in stacks for layer in stack.layers]
    ffns = [layer.ffn for layer in layers]
    positional = model.positional if isinstance(model, Transformer) else model.body.positional
    dropout = model.dropout if isinstance(model, Transformer) else model.body.dropout
    embed = model.tgt_embed if isinstance(model, Transformer) else model.body.embed
    return {
        "d_model": {layer.self_attn.d_model for layer in layers},
        "num_heads": {layer.self_attn.num_heads for layer in layers},
        "d_ff": {ffn.w_1.out_features for ffn in ffns},
        "layers": {len(stack.layers) for stack in stacks},
        # every dropout but the sinusoidal module's own (p = 0: the families apply one dropout after it)
        "dropout": {m.p for stack in stacks for m in stack.modules() if isinstance(m, nn.Dropout)} | {dropout.p},
        "norm_first": {layer.norm_first for layer in layers},
        "activation": {ffn.activation for ffn in ffns},
        "final_norm": {stack.final_norm is not None for stack in stacks},
        "bias": {layer.ffn.w_1.bias is not None for layer in layers} | {layer.norm1.bias is not None for layer in layers},
        "positional": type(positional).__name__,
        "tied": model.output.weight is embed.weight,
        "max_len": positional.pe.shape[0] if isinstance(positional, SinusoidalPositionalEncoding) else None,
    }


def test_the_three_families_share_every_default_field_by_field() -> None:
    torch.manual_seed(0)
    models = {
        "encoder-decoder": Transformer(V, V),
        "decoder-only": DecoderOnlyTransformer(V),
        "encoder-only": EncoderOnlyTransformer(V),
    }
    configs = {name: m.config for name, m in models.items()}
    for name in SHARED:  # same value in all three configs
        assert len({getattr(c, name) for c in configs.values()}) == 1, name
    built = {name: _built_settings(m) for name, m in models.items()}
    reference = built["encoder-decoder"]
    for name, settings in built.items():
        for key, value in settings.items():
            assert value == reference[key], (name, key, value, reference[key])
    # and those shared settings are the paper's base model (Vaswani et al. 2017, Table 3 and §3)
    assert reference == {
        "d_model": {512}, "num_heads": {8}, "d_ff": {2048}, "layers": {6}, "dropout": {0.1},
        "norm_first": {False}, "activation": {"relu"}, "final_norm": {False}, "bias": {True},
        "positional": "SinusoidalPositionalEncoding", "tied": False, "max_len": 512,
    }
    assert [len(s.layers) for s in _stacks(models["encoder-decoder"])] == [6, 6]


def test_shared_fields_come_first_in_one_order_in_every_family() -> None:
    for cls in (TransformerConfig, DecoderOnlyConfig, EncoderOnlyConfig):
        fields = dataclasses.fields(cls)
        assert [f.name for f in fields[: len(SHARED)]] == SHARED
        base = {f.name: f.default for f in dataclasses.fields(ModelConfig)}
        assert {f.name: f.default for f in fields[: len(SHARED)]} == base


@pytest.mark.parametrize(
    ("cls", "config"),
    [
        (Transformer, TransformerConfig(7, 9, d_model=16, num_heads=2, d_ff=24, num_encoder_layers=1,
                                        num_decoder_layers=2, positional="rope", norm_first=True, bias=False)),
        (DecoderOnlyTransformer, DecoderOnlyConfig(9, d_model=16, num_heads=2, d_ff=24, num_layers=1,
                                                   positional="learned", activation="gelu", tie_embeddings=True)),
        (EncoderOnlyTransformer, EncoderOnlyConfig(9, d_model=16, num_heads=4, d_ff=24, num_layers=2, num_classes=3,
                                                   final_norm=True, pad_id=None)),
    ],
)
def test_config_round_trip(cls: type[nn.Module], config: ModelConfig) -> None:
    torch.manual_seed(0)
    model = cls(config)
    assert model.config is config
    torch.manual_seed(0)
    again = cls.from_config(model.config)  # type: ignore[attr-defined]
    assert again.config == config
    state, state_again = model.state_dict(), again.state_dict()
    assert state.keys() == state_again.keys()
    assert all(torch.equal(state[k], state_again[k]) for k in state)
    torch.manual_seed(0)
    by_keywords = cls(**dataclasses.asdict(config))  # the same fields as keywords build the same model
    assert by_keywords.config == config
    assert all(torch.equal(state[k], v) for k, v in by_keywords.state_dict().items())
    changed = cls(config, dropout=0.0)  # a config plus keywords: a changed copy
    assert changed.config == dataclasses.replace(config, dropout=0.0) and config.dropout == 0.1


def test_final_norm_follows_norm_first_unless_set() -> None:
    small = dict(d_model=16, num_heads=2, d_ff=16, num_layers=1)
    assert DecoderOnlyTransformer(V, **small).body.encoder.final_norm is None
    assert DecoderOnlyTransformer(V, **small, norm_first=True).body.encoder.final_norm is not None
    assert DecoderOnlyTransformer(V, **small, norm_first=True, final_norm=False).body.encoder.final_norm is None
    no_bias = DecoderOnlyTransformer(V, **small, norm_first=True, bias=False).body.encoder
    assert no_bias.final_norm.bias is None and all(p.dim() != 1 or "norm" in n for n, p in no_bias.named_parameters())


def test_configs_are_frozen_and_validated() -> None:
    config = DecoderOnlyConfig(V)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.d_model = 8  # type: ignore[misc]
    cases = [
        (ValueError, r"d_model: expected a multiple of num_heads=8, got 100", dict(d_model=100)),
        (ValueError, r"num_heads: expected a positive int, got 0", dict(num_heads=0)),
        (TypeError, r"d_ff: expected an int, got float", dict(d_ff=8.0)),
        (ValueError, r"dropout: expected a number in \[0, 1\), got 1.0", dict(dropout=1.0)),
        (ValueError, r"positional: expected one of 'sinusoidal', 'learned', 'rope', 'alibi', got 'relative'",
         dict(positional="relative")),
        (ValueError, r"activation: expected one of 'relu', 'gelu', got 'tanh'", dict(activation="tanh")),
        (ValueError, r"positional: 'rope' rotates pairs of features, expected an even head width .* got 3",
         dict(d_model=24, num_heads=8, positional="rope")),
        (TypeError, r"norm_first: expected a bool, got int", dict(norm_first=1)),
        (TypeError, r"final_norm: expected a bool or None, got str", dict(final_norm="yes")),
        (ValueError, r"pad_id: expected an id in \[0, 11\)", dict(pad_id=11)),
        (ValueError, r"num_layers: expected a positive int, got 0", dict(num_layers=0)),
        (ValueError, r"init: expected one of 'xavier', 'torch', got 'kaiming'", dict(init="kaiming")),
    ]
    for error, message, change in cases:
        with pytest.raises(error, match=message):
            DecoderOnlyConfig(V, **change)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"pad_id: expected an id in both vocabularies"):
        TransformerConfig(V, V, pad_id=None)
    with pytest.raises(ValueError, match=r"pad_id: expected an id in \[0, 5\)"):
        TransformerConfig(V, 5, pad_id=7)
    with pytest.raises(ValueError, match=r"num_classes: expected a positive int, got 0"):
        EncoderOnlyConfig(V, num_classes=0)
    with pytest.raises(TypeError, match=r"config: expected one DecoderOnlyConfig"):
        DecoderOnlyTransformer(EncoderOnlyConfig(V))


def test_feed_forward_of_a_gelu_config_is_gelu() -> None:
    torch.manual_seed(0)
    model = EncoderOnlyTransformer(V, d_model=16, num_heads=2, d_ff=16, num_layers=1, activation="gelu").eval()
    ffn: FeedForward = model.body.encoder.layers[0].ffn
    x = torch.randn(2, 3, 16)
    expected = ffn.w_2(nn.functional.gelu(ffn.w_1(x)))
    torch.testing.assert_close(ffn(x), expected, atol=0.0, rtol=0.0)


def test_the_shared_config_alone_builds_and_checks_its_pad_id() -> None:
    # ModelConfig has no vocabulary: pad_id can only be checked as an id (it once crashed on min() of nothing)
    assert ModelConfig().pad_id == 0 and ModelConfig(pad_id=None).pad_id is None
    with pytest.raises(ValueError, match=r"pad_id: expected a non-negative int, got -1"):
        ModelConfig(pad_id=-1)


def test_a_vocabulary_of_padding_alone_is_refused() -> None:  # breaker NIT
    with pytest.raises(ValueError, match=r"vocab_size: expected at least 2 tokens when pad_id is set, got 1"):
        DecoderOnlyConfig(1, pad_id=0)
    DecoderOnlyConfig(1, pad_id=None)  # no padding: one token is a (trivial) vocabulary


def test_decoder_only_names_a_misused_cache() -> None:
    from tformer.models import DecoderOnlyTransformer

    model = DecoderOnlyTransformer(12, d_model=16, num_heads=2, num_layers=2, d_ff=32, max_len=16, dropout=0.0).eval()
    tokens = torch.tensor([[1, 2, 3]])
    for cache, error, message in [
        ([], ValueError, r"cache: expected a list of 2 KVCache \(model.new_cache\(\)\), got a list of 0"),
        ([None, None], TypeError, r"cache\[0\]: expected a KVCache \(a list of 2 KVCache"),
        ([(KVCache(), KVCache())] * 2, TypeError, r"cache\[0\]: expected a KVCache .* got tuple"),
        (tuple(model.new_cache()), TypeError, r"cache: expected a list of 2 KVCache \(model.new_cache\(\)\), got tuple"),
    ]:
        with pytest.raises(error, match=message):
            model(tokens, cache=cache)
    cache = model.new_cache()
    assert torch.allclose(model(tokens, cache=cache), model(tokens), atol=1e-6)


# ---------------------------------------------------------------- issue 15 §2: one matrix for both languages


def test_shared_embeddings_equal_an_untied_model_with_equal_weights() -> None:
    # Vaswani et al. 2017 §3.4 / Press & Wolf 2017: with one vocabulary, one V x D matrix embeds the source and
    # the target and scores the output. Reference: an untied model whose three matrices are set to that matrix.
    shared = _model(share_embeddings=True, tie_embeddings=True, vocab=V_SRC)
    untied = _model(vocab=V_SRC)
    assert shared.src_embed.weight is shared.tgt_embed.weight is shared.output.weight
    with torch.no_grad():
        for name, tensor in untied.state_dict().items():
            tensor.copy_(shared.state_dict()[name])
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(untied) - count(shared) == 2 * V_SRC * D
    src, tgt_in = _tokens(V_SRC, B, S, seed=1), _tokens(V_SRC, B, L, seed=2)
    assert_close(shared(src, tgt_in), untied(src, tgt_in), **TOL)
    # the shared matrix's gradient is the sum of the three roles' gradients in the untied model
    shared(src, tgt_in).square().sum().backward()
    untied(src, tgt_in).square().sum().backward()
    summed = untied.src_embed.weight.grad + untied.tgt_embed.weight.grad + untied.output.weight.grad
    assert_close(shared.src_embed.weight.grad, summed, **TOL)
    assert not torch.allclose(untied.src_embed.weight.grad, summed)  # each role alone is not the whole gradient


def test_shared_embeddings_only_share_the_two_embeddings_without_tying() -> None:
    model = _model(share_embeddings=True, vocab=V_SRC)
    assert model.src_embed.weight is model.tgt_embed.weight
    assert model.output.weight is not model.tgt_embed.weight


def test_shared_embeddings_need_one_vocabulary() -> None:
    with pytest.raises(ValueError, match=r"^share_embeddings: expected one vocabulary .* got 23 and 19$"):
        _model(share_embeddings=True)
    with pytest.raises(TypeError, match="share_embeddings"):
        _model(share_embeddings=1, vocab=V_SRC)
