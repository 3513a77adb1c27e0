"""The family configs: shared fields and defaults, the paper's base settings, validation, config round trips."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from tformer.layers import FeedForward
from tformer.models import (
    DecoderOnlyConfig,
    DecoderOnlyTransformer,
    EncoderOnlyConfig,
    EncoderOnlyTransformer,
    ModelConfig,
    Transformer,
    TransformerConfig,
)
from tformer.positional import SinusoidalPositionalEncoding

SHARED = [f.name for f in dataclasses.fields(ModelConfig)]
V = 11


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
        (ValueError, r"dropout: expected a probability in \[0, 1\), got 1.0", dict(dropout=1.0)),
        (ValueError, r"positional: expected one of 'sinusoidal', 'learned', 'rope', got 'alibi'",
         dict(positional="alibi")),
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
