"""Every public entry point answers a bad argument with one message shape: ``name: expected …, got …``.

One bad call per name in ``tformer.__all__`` (a test below checks none is missing): the right exception type
(TypeError for a wrong kind of thing, ValueError for a wrong value) and a message that names the argument first,
then what was expected and what came.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import torch

import tformer as tf

MESSAGE = re.compile(r"^[A-Za-z_][\w.\[\], ]*: (.* )?expected .+ got .+", re.DOTALL)
x3 = torch.zeros(2, 3, 8)  # (B, L, D) with D = 8
ids = torch.ones(2, 3, dtype=torch.long)  # (B, L)


def _greedy() -> None:
    model = tf.Transformer(5, 5, d_model=8, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, d_ff=8)
    tf.greedy_decode(model, ids, max_len=0, bos_id=1, eos_id=2)


def _beam() -> None:
    model = tf.Transformer(5, 5, d_model=8, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, d_ff=8)
    tf.beam_search(model, ids, max_len=4, bos_id=1, eos_id=2, beam_size=0)


CASES: dict[str, tuple[type[Exception], str, Callable[[], object]]] = {
    "GRU": (ValueError, "hidden_size", lambda: tf.GRU(4, 0)),
    "LSTM": (TypeError, "input_size", lambda: tf.LSTM(4.0, 8)),
    "RNN": (ValueError, "num_layers", lambda: tf.RNN(4, 8, num_layers=0)),
    "BahdanauAttention": (ValueError, "query_dim", lambda: tf.BahdanauAttention(0, 8, 8)),
    "Decoder": (ValueError, "num_layers", lambda: tf.Decoder(0, 8, 2, 16)),
    "DecoderLayer": (ValueError, "d_model", lambda: tf.DecoderLayer(9, 2, 16)),
    "DecoderOnlyConfig": (ValueError, "num_heads", lambda: tf.DecoderOnlyConfig(11, num_heads=0)),
    "DecoderOnlyTransformer": (TypeError, "norm_first", lambda: tf.DecoderOnlyTransformer(11, norm_first=1)),
    "Encoder": (ValueError, "num_layers", lambda: tf.Encoder(0, 8, 2, 16)),
    "EncoderLayer": (ValueError, "dropout", lambda: tf.EncoderLayer(8, 2, 16, dropout=1.5)),
    "EncoderOnlyConfig": (ValueError, "num_classes", lambda: tf.EncoderOnlyConfig(11, num_classes=0)),
    "EncoderOnlyTransformer": (ValueError, "activation", lambda: tf.EncoderOnlyTransformer(11, activation="tanh")),
    "FeedForward": (ValueError, "d_ff", lambda: tf.FeedForward(8, 0)),
    "GroupedQueryAttention": (ValueError, "num_heads", lambda: tf.GroupedQueryAttention(8, 4, 3)),
    "KVCache": (ValueError, "key, value", lambda: tf.KVCache().update(torch.zeros(2, 3), torch.zeros(2, 3))),
    "LearnedPositionalEmbedding": (ValueError, "max_len", lambda: tf.LearnedPositionalEmbedding(0, 8)),
    "LinearAttention": (ValueError, "d_model", lambda: tf.LinearAttention(9, 2)),
    "MixtureOfExperts": (ValueError, "top_k", lambda: tf.MixtureOfExperts(8, 16, num_experts=2, top_k=3)),
    "ModernDecoderLM": (ValueError, "max_len", lambda: tf.ModernDecoderLM(11, 8, 2, 1, 1, 16, max_len=0)),
    "ModernDecoderLayer": (ValueError, "num_heads",
                           lambda: tf.ModernDecoderLayer(8, 2, 3, 16, rope=tf.RotaryEmbedding(4))),
    "modern_lm_parameter_count": (TypeError, "vocab_size", lambda: tf.modern_lm_parameter_count(True, 8, 2, 1, 1, 16)),
    "ModelConfig": (ValueError, "d_model", lambda: tf.ModelConfig(d_model=100, pad_id=None)),
    "MultiHeadAttention": (TypeError, "query", lambda: tf.MultiHeadAttention(8, 2)([[0.0]], x3, x3)),
    "RMSNorm": (ValueError, "eps", lambda: tf.RMSNorm(8, eps=-1.0)),
    "RotaryEmbedding": (ValueError, "head_dim", lambda: tf.RotaryEmbedding(7)),
    "Seq2SeqRNN": (ValueError, "cell", lambda: tf.Seq2SeqRNN(5, 5, 8, 8, cell="tanh")),
    "SinusoidalPositionalEncoding": (ValueError, "x", lambda: tf.SinusoidalPositionalEncoding(8)(torch.zeros(2, 3, 6))),
    "SwiGLUFeedForward": (ValueError, "d_ff", lambda: tf.SwiGLUFeedForward(8, 0)),
    "Transformer": (ValueError, "pad_id", lambda: tf.Transformer(5, 5, pad_id=7)),
    "TransformerConfig": (ValueError, "num_encoder_layers", lambda: tf.TransformerConfig(5, 5, num_encoder_layers=0)),
    "alibi_bias": (ValueError, "num_heads", lambda: tf.alibi_bias(0, 3, 3)),
    "alibi_slopes": (TypeError, "num_heads", lambda: tf.alibi_slopes(2.0)),
    "as_key_padding": (TypeError, "mask", lambda: tf.as_key_padding([[True]])),
    "attention_mask_for_heads": (TypeError, "mask", lambda: tf.attention_mask_for_heads("no", 2, 2, 3, 3)),
    "beam_search": (ValueError, "beam_size", _beam),
    "causal_mask": (ValueError, "L", lambda: tf.causal_mask(-1)),
    "get_device": (ValueError, "prefer", lambda: tf.get_device("tpu")),
    "greedy_decode": (ValueError, "max_len", _greedy),
    "padding_mask": (ValueError, "lengths", lambda: tf.padding_mask([1, 4], 3)),
    "padding_mask_from_tokens": (TypeError, "tokens", lambda: tf.padding_mask_from_tokens(torch.zeros(2, 3), 0)),
    "scaled_dot_product_attention": (TypeError, "mask",
                                     lambda: tf.scaled_dot_product_attention(x3, x3, x3, mask=torch.zeros(3, 3))),
    "seed_everything": (TypeError, "seed", lambda: tf.seed_everything("0")),
    "sequence_cross_entropy": (TypeError, "logits",
                               lambda: tf.sequence_cross_entropy(ids, ids, 0)),
    "shift_right": (ValueError, "bos_id", lambda: tf.shift_right(ids, bos_id=-1)),
    "sinusoidal_positional_encoding": (ValueError, "d_model", lambda: tf.sinusoidal_positional_encoding(4, 0)),
    "sliding_window_mask": (ValueError, "window", lambda: tf.sliding_window_mask(4, 0)),
    "swiglu_hidden_width": (ValueError, "multiple_of", lambda: tf.swiglu_hidden_width(8, multiple_of=0)),
}


def test_every_public_name_has_a_case() -> None:
    assert sorted(CASES) == sorted(tf.__all__)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_bad_argument_gets_the_one_message_shape(name: str) -> None:
    error, argument, call = CASES[name]
    with pytest.raises((TypeError, ValueError)) as caught:
        call()
    message = str(caught.value)
    assert type(caught.value) is error, f"{name}: {type(caught.value).__name__}: {message}"
    assert MESSAGE.match(message), f"{name}: {message!r} is not 'name: expected …, got …'"
    assert message.split(":")[0] == argument, f"{name}: the message names {message.split(':')[0]!r}"
