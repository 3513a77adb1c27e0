"""tformer: the package behind the tformer textbook, from RNNs to the Transformer.

Dimension letters, fixed across the package and the book (batch-first everywhere):

====  ===========================================  ====  =====================================
B     batch size                                   H     number of heads (``num_heads``)
L     query / target length                        Dh    head width (``head_dim`` = D / H)
S     key / source length                          F     feed-forward width (``d_ff``)
D     model width (``d_model``)                    V     vocabulary size
====  ===========================================  ====  =====================================

Masks are boolean with **True = may attend**, as in ``torch.nn.functional.scaled_dot_product_attention``.

The map. The model path sits at the top, in the order the book builds it; everything else is in a room named
for its job, so a new piece goes where its job is (the chapter that introduces each module in brackets)::

    tformer/
        functional.py        scaled dot-product attention, the one place the maths lives (03-05)
        masks.py             causal and padding masks, True = may attend (06)
        attention.py         multi-head attention and the key/value cache (07, 10)
        positional.py        sinusoidal, learned and rotary positions, ALiBi biases (08)
        layers.py            feed-forward, encoder and decoder layers and stacks (09)
        models.py            the three families and their configs: encoder-decoder, decoder-only, encoder-only (10, 12)
        decoding.py          greedy, beam search, sampling (10, 12)
        baselines/           what came before attention: rnn (RNN, LSTM, GRU), seq2seq_rnn (01, 02)
        variants/            what changed after 2017, each beside the 2017 piece it replaces: efficient (GQA,
                             sliding windows, linear attention), moe, rmsnorm, swiglu; modern_block, a 2024
                             decoder built from them (14); neighbour (a token embedding with pair and
                             convolution channels, 11)
        data/                text.py (tokens, vocabularies, batches); corpus.py (the generated running example);
                             tasks.py and extrapolation.py (toy tasks); hsk.py (real Chinese-English sentences
                             with pinyin, 11); subword.py (a BPE tokenizer, 11); poems.py (Tang poems and
                             measures of their form, 17)
        training/            teacher_forcing, train (the loop, equal-time budgets), metrics; mlm (BERT's masked-token
                             pre-training, 11); distributed (DDP, FSDP, tensor parallel) (15)
        analysis/            formulas and measurements of cost: complexity (13), parallelism (memory, traffic) (15)
        book/                the notebooks' helpers: environment, plot (attention heatmaps, styles), results, exercises,
                             diagrams, source; shipped (the trained models the book ships, 10, 17); poet (trains
                             chapter 17's small GPT, 17); playground (your own sentence through the shipped
                             translator, your own opening line through the shipped poet, 10, 17); topics
                             (fine-tuning the shipped encoders on HSK topics, 12)
        environment.py       seeding, devices and the training clock, shared by the library and the book
        _checks.py           argument checks, one message format, shared by every module

The rule between the top level and ``variants/``: the top level is the 2017 model path, and every position
scheme a model takes as ``positional=`` (sinusoidal, learned, RoPE, ALiBi) lives in ``positional.py``; a piece
that replaces another part of the 2017 design in a later one (GQA, RMSNorm, SwiGLU, MoE) goes to ``variants/``.

``tformer.book.plot`` is imported on demand (it loads matplotlib).
"""

from tformer.attention import KVCache, MultiHeadAttention
from tformer.baselines.rnn import GRU, LSTM, RNN
from tformer.baselines.seq2seq_rnn import BahdanauAttention, Seq2SeqRNN
from tformer.decoding import beam_search, greedy_decode
from tformer.environment import get_device, seed_everything
from tformer.functional import scaled_dot_product_attention
from tformer.layers import Decoder, DecoderLayer, Encoder, EncoderLayer, FeedForward
from tformer.masks import (
    as_key_padding,
    attention_mask_for_heads,
    causal_mask,
    padding_mask,
    padding_mask_from_tokens,
)
from tformer.models import (
    DecoderOnlyConfig,
    DecoderOnlyTransformer,
    EncoderOnlyConfig,
    EncoderOnlyTransformer,
    ModelConfig,
    Transformer,
    TransformerConfig,
)
from tformer.positional import (
    LearnedPositionalEmbedding,
    RotaryEmbedding,
    SinusoidalPositionalEncoding,
    alibi_bias,
    alibi_slopes,
    sinusoidal_positional_encoding,
)
from tformer.training.teacher_forcing import sequence_cross_entropy, shift_right
from tformer.variants.efficient import GroupedQueryAttention, LinearAttention, sliding_window_mask
from tformer.variants.modern_block import ModernDecoderLayer, ModernDecoderLM, modern_lm_parameter_count
from tformer.variants.moe import MixtureOfExperts
from tformer.variants.rmsnorm import RMSNorm
from tformer.variants.swiglu import SwiGLUFeedForward, swiglu_hidden_width

__version__ = "0.1.0"

__all__ = [
    "GRU",
    "LSTM",
    "RNN",
    "BahdanauAttention",
    "Decoder",
    "DecoderLayer",
    "DecoderOnlyConfig",
    "DecoderOnlyTransformer",
    "Encoder",
    "EncoderLayer",
    "EncoderOnlyConfig",
    "EncoderOnlyTransformer",
    "FeedForward",
    "GroupedQueryAttention",
    "KVCache",
    "LearnedPositionalEmbedding",
    "LinearAttention",
    "MixtureOfExperts",
    "ModelConfig",
    "ModernDecoderLM",
    "ModernDecoderLayer",
    "MultiHeadAttention",
    "RMSNorm",
    "RotaryEmbedding",
    "Seq2SeqRNN",
    "SinusoidalPositionalEncoding",
    "SwiGLUFeedForward",
    "Transformer",
    "TransformerConfig",
    "alibi_bias",
    "alibi_slopes",
    "as_key_padding",
    "attention_mask_for_heads",
    "beam_search",
    "causal_mask",
    "get_device",
    "greedy_decode",
    "modern_lm_parameter_count",
    "padding_mask",
    "padding_mask_from_tokens",
    "scaled_dot_product_attention",
    "seed_everything",
    "sequence_cross_entropy",
    "shift_right",
    "sinusoidal_positional_encoding",
    "sliding_window_mask",
    "swiglu_hidden_width",
]
