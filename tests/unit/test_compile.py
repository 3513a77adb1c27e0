"""A forward pass of each family traces into one graph under ``torch.compile(fullgraph=True)`` (CPU).

``backend="eager"`` runs TorchDynamo's graph capture, which is what refuses a graph break or a branch on a
tensor's values, without Inductor's code generation (that takes about a minute on two cores and tests nothing
more about graph breaks).
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor

import tformer.attention
from tformer.models import DecoderOnlyTransformer, EncoderOnlyTransformer, Transformer

SMALL = dict(d_model=16, num_heads=2, d_ff=32, max_len=16, dropout=0.0)
V = 11


def _families(positional: str) -> dict[str, tuple[torch.nn.Module, tuple[Tensor, ...]]]:
    torch.manual_seed(0)
    tokens = torch.randint(1, V, (2, 5))
    tokens[1, 3:] = 0  # padding, so the padding masks are exercised
    settings = {**SMALL, "positional": positional}
    return {
        "decoder-only": (DecoderOnlyTransformer(V, num_layers=1, **settings).eval(), (tokens,)),
        "encoder-only": (EncoderOnlyTransformer(V, num_layers=1, **settings).eval(), (tokens,)),
        "encoder-decoder": (Transformer(V, V, num_encoder_layers=1, num_decoder_layers=1, **settings).eval(),
                            (tokens, tokens)),
    }


def _attention_without_value_branches(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None, dropout_p: float = 0.0,
    score_bias: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """softmax(QKᵀ/√Dh + bias)V with all-masked rows zeroed by masking, not by a branch on ``mask.all()``."""
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (..., L, S)
    if score_bias is not None:
        scores = scores + score_bias
    if mask is None:
        weights = scores.softmax(-1)
    else:
        has_key = mask.any(-1, keepdim=True)  # (..., L, 1)
        scores = scores.masked_fill(~mask, float("-inf")).masked_fill(~has_key, 0.0)
        weights = scores.softmax(-1).masked_fill(~has_key, 0.0)
    return weights @ value, weights


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_models_layers_and_positions_trace_into_one_graph(positional: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The attention core (tformer.functional.attend, which the attention module calls unchecked) is swapped for
    # a branch-free version, so this test covers what
    # wraps it: models, layers, attention module, masks, positions. Its numbers must not change.
    for name, (model, inputs) in _families(positional).items():
        eager = model(*inputs)
        monkeypatch.setattr(tformer.attention, "attend", _attention_without_value_branches)
        torch.testing.assert_close(model(*inputs), eager, atol=1e-6, rtol=1e-6, msg=name)
        compiled = torch.compile(model, fullgraph=True, backend="eager")
        torch.testing.assert_close(compiled(*inputs), eager, atol=1e-6, rtol=1e-6, msg=name)
        monkeypatch.undo()
        torch._dynamo.reset()


def test_each_family_compiles_with_fullgraph() -> None:
    # the package's own attention (no monkeypatch): no value branch left to break the graph
    for name, (model, inputs) in _families("sinusoidal").items():
        compiled = torch.compile(model, fullgraph=True, backend="eager")
        torch.testing.assert_close(compiled(*inputs), model(*inputs), atol=1e-6, rtol=1e-6, msg=name)
    torch._dynamo.reset()
