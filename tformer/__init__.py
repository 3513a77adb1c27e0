"""tformer: the package behind the tformer textbook, from RNNs to the Transformer.

Dimension letters, fixed across the package and the book (batch-first everywhere):

====  ===========================================  ====  =====================================
B     batch size                                   H     number of heads (``num_heads``)
L     query / target length                        Dh    head width (``head_dim`` = D / H)
S     key / source length                          F     feed-forward width (``d_ff``)
D     model width (``d_model``)                    V     vocabulary size
====  ===========================================  ====  =====================================

Masks are boolean with **True = may attend**, as in ``torch.nn.functional.scaled_dot_product_attention``.

Modules, one idea each (the chapter that introduces it in brackets): ``rnn`` and ``seq2seq_rnn`` (01, 02),
``functional`` (05), ``masks`` (06), ``attention`` (07), ``positional`` (08), ``layers`` (09), ``models``,
``decoding`` and ``teacher_forcing`` (10, 11), ``complexity`` and ``efficient`` (12, 13), the data and
training helpers ``corpus``, ``text``, ``tasks``, ``train`` and ``metrics``, and the book's own helpers
``plot``, ``results``, ``exercises`` and ``utils``. ``tformer.plot`` is imported on demand (it loads matplotlib).
"""

from tformer.attention import KVCache, MultiHeadAttention
from tformer.decoding import beam_search, greedy_decode
from tformer.efficient import GroupedQueryAttention, LinearAttention, sliding_window_mask
from tformer.functional import scaled_dot_product_attention
from tformer.layers import Decoder, DecoderLayer, Encoder, EncoderLayer, FeedForward
from tformer.masks import (
    as_key_padding,
    attention_mask_for_heads,
    causal_mask,
    padding_mask,
    padding_mask_from_tokens,
)
from tformer.models import DecoderOnlyTransformer, EncoderOnlyTransformer, Transformer
from tformer.moe import MixtureOfExperts
from tformer.positional import (
    LearnedPositionalEmbedding,
    RotaryEmbedding,
    SinusoidalPositionalEncoding,
    sinusoidal_positional_encoding,
)
from tformer.rnn import GRU, LSTM, RNN
from tformer.seq2seq_rnn import BahdanauAttention, Seq2SeqRNN
from tformer.teacher_forcing import sequence_cross_entropy, shift_right
from tformer.utils import get_device, seed_everything

__version__ = "0.1.0"

__all__ = [
    "GRU",
    "LSTM",
    "RNN",
    "BahdanauAttention",
    "Decoder",
    "DecoderLayer",
    "DecoderOnlyTransformer",
    "Encoder",
    "EncoderLayer",
    "EncoderOnlyTransformer",
    "FeedForward",
    "GroupedQueryAttention",
    "KVCache",
    "LearnedPositionalEmbedding",
    "LinearAttention",
    "MixtureOfExperts",
    "MultiHeadAttention",
    "RotaryEmbedding",
    "Seq2SeqRNN",
    "SinusoidalPositionalEncoding",
    "Transformer",
    "as_key_padding",
    "attention_mask_for_heads",
    "beam_search",
    "causal_mask",
    "get_device",
    "greedy_decode",
    "padding_mask",
    "padding_mask_from_tokens",
    "scaled_dot_product_attention",
    "seed_everything",
    "sequence_cross_entropy",
    "shift_right",
    "sinusoidal_positional_encoding",
    "sliding_window_mask",
]
