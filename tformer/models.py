"""The three Transformer families on one set of blocks: encoder-decoder, decoder-only, encoder-only.

Introduced in ``10_encoder_decoder`` (:class:`Transformer`, Vaswani et al. 2017) and ``12_three_families``
(:class:`DecoderOnlyTransformer`, GPT-style; :class:`EncoderOnlyTransformer`, BERT-style). What separates the
families is the mask: the encoder sees the whole sequence, the decoder only the past.

Each family is built from one frozen config (:class:`TransformerConfig`, :class:`DecoderOnlyConfig`,
:class:`EncoderOnlyConfig`), the way nanoGPT's ``GPTConfig`` and Hugging Face's ``LlamaConfig`` work. The three
inherit every setting they share from :class:`ModelConfig`, so the names and defaults cannot drift apart, and
the defaults are the paper's base model (Table 3) for all three: ``Transformer(TransformerConfig(V, V))`` is the
model of §3, and the two one-stack families are that model's stack with a causal mask or none.

Token embeddings are multiplied by √D before positions are added (§3.4). Weights start from Xavier-uniform, as
in torch's ``nn.Transformer``, except in modules that document their own initialisation (see
:func:`init_weights`).

Dimension letters: B batch, S source length, L target length, D ``d_model``, H heads, Dh head width, F ``d_ff``,
V vocabulary.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import KW_ONLY, dataclass
from typing import Any, ClassVar, Literal, TypeVar

import torch
from torch import Tensor, nn

from tformer._checks import (
    check_activation,
    check_bool,
    check_cache_count,
    check_choice,
    check_divisible,
    check_flags,
    check_int,
    check_probability,
    check_tensor,
    check_tokens,
    check_type,
    plain_numbers,
    values_are_cheap,
)
from tformer.attention import KVCache
from tformer.decoding import CachedGenerationMixin, beam_search, greedy_decode
from tformer.layers import Decoder, Encoder
from tformer.masks import causal_mask
from tformer.positional import LearnedPositionalEmbedding, RotaryEmbedding, SinusoidalPositionalEncoding

__all__ = [
    "LEARNED_POSITION_STD",
    "CachedGenerationMixin",
    "DecoderOnlyConfig",
    "DecoderOnlyTransformer",
    "EncoderOnlyConfig",
    "EncoderOnlyTransformer",
    "ModelConfig",
    "Transformer",
    "TransformerConfig",
    "TransformerOutput",
    "as_config",
    "init_weights",
]

Positional = Literal["sinusoidal", "learned", "rope", "alibi"]
RELATIVE_POSITIONS = ("rope", "alibi")  # encode offsets between tokens only: no length limit

# A learned position table starts at the size of the sinusoidal table it replaces (each entry sin or cos of a
# spread of angles: RMS 1/√2) and of the √D-scaled token embeddings (about 1) it is added to. GPT-2's small start
# (N(0, 0.01²) in OpenAI's code, N(0, 0.02²) in Hugging Face's) is balanced against its unscaled N(0, 0.02²) token
# embeddings; next to our table's 1/√2 it is 35 to 70 times too small.
# Measured on chapter 08's look-back task (400 steps, a 32-row table), accuracy within the training length:
# std 0.02 -> 63%, 0.1 -> 78%, 0.3 -> 89%, 1/√2 -> 97%, 1.0 -> 98%.
LEARNED_POSITION_STD = 2**-0.5
Activation = Literal["relu", "gelu"]
InitScheme = Literal["xavier", "torch"]


def init_weights(model: nn.Module, scheme: InitScheme = "xavier") -> None:
    """Re-initialise ``model`` in place.

    ``"xavier"``: every parameter with two or more dimensions (linear maps, embeddings) from Xavier-uniform
    (Glorot & Bengio 2010), as ``torch.nn.Transformer._reset_parameters`` and the Annotated Transformer do; an
    embedding (V, D) then has std ≈ √(2/(V+D)), so √D-scaled embeddings have roughly unit size, comparable to
    the sinusoidal positions. ``"torch"``: keep PyTorch's per-layer defaults (Kaiming-uniform linears,
    N(0, 1) embeddings — about √D ≈ 11 after the √D scaling, swamping the positions).

    Parameters of a submodule whose class sets ``keeps_own_init = True`` are left as that module initialised
    them: :class:`~tformer.positional.LearnedPositionalEmbedding` documents N(0, std²) (the models pass
    ``std`` = :data:`LEARNED_POSITION_STD`), which Xavier would replace by √(2/(max_len+D)) (0.11 for 128 × 32).

    It matters at small scale. Measured on the running-example corpus (D=128, H=4, 2+2 layers, F=256, batch 64,
    Adam 1e-3 with 100 warm-up steps, one seed), validation loss after 240 steps: xavier 0.27 (post-norm) /
    0.17 (pre-norm); torch defaults 0.83 (post-norm) / 1.69 (pre-norm).

    Raises:
        ValueError: on an unknown ``scheme``.
    """
    check_choice("scheme", scheme, ("xavier", "torch"))
    if scheme == "xavier":
        own = {id(p) for m in model.modules() if getattr(m, "keeps_own_init", False) for p in m.parameters()}
        for p in model.parameters():
            if p.dim() > 1 and id(p) not in own:
                nn.init.xavier_uniform_(p)


def _check_sizes(pad_id: int | None = None, **sizes: object) -> None:
    """Every size a positive int; ``pad_id`` (when given) a valid id of every vocabulary among ``sizes``."""
    for name, value in sizes.items():
        check_int(name, value, 1)
    vocabularies = [v for k, v in sizes.items() if k.endswith("vocab_size")]
    if pad_id is not None and not vocabularies:  # ModelConfig alone: no vocabulary to check the id against
        pad_id = check_int("pad_id", pad_id, 0)
    elif pad_id is not None:
        vocab = min(vocabularies)
        if not 0 <= check_int("pad_id", pad_id) < vocab:
            raise ValueError(f"pad_id: expected an id in [0, {vocab}) (inside every vocabulary), got {pad_id!r}")
        for name, value in sizes.items():
            if name.endswith("vocab_size") and value == 1:  # its only id would be padding: nothing to predict
                raise ValueError(f"{name}: expected at least 2 tokens when pad_id is set, got 1 (pass pad_id=None)")


# ---------------------------------------------------------------- configs


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """The settings every family shares, with one set of defaults: the paper's base model.

    Vaswani et al. 2017, Table 3 ("base"): D = 512, H = 8, N = 6 layers, F = 2048, dropout 0.1; §3.1 post-norm
    residual blocks (``LayerNorm(x + Sublayer(x))``), §3.3 ReLU, §3.5 sinusoidal positions. Each family config
    adds, after these fields, its vocabulary sizes (its positional arguments) and its layer counts (6 by
    default); every other field is keyword-only.

    **One norm placement, activation and final norm for all three families.** BERT and GPT-1 were post-norm
    too (GELU instead of ReLU, learned positions); GPT-2 and later moved to pre-norm. The book's default is the
    2017 block for every family, so that a comparison between families (chapter 12) is a comparison of masks and
    nothing else; set ``norm_first=True`` (pre-norm, which trains deeper stacks more easily, chapter 09),
    ``activation="gelu"`` or ``positional="learned"`` on any of them alike.

    Attributes:
        d_model: D, the width of every token vector.
        num_heads: H; D must be a multiple of H (head width Dh = D / H, even for RoPE).
        d_ff: F, the hidden width of each feed-forward network (the paper: 4·D).
        dropout: one rate for embeddings + positions, attention weights, FFN hidden units and every residual
            branch (paper: 0.1, §5.4), training mode only.
        max_len: the longest input the positions cover (tokens). Learned and sinusoidal positions refuse longer
            inputs (``generate`` crops its context to the last ``max_len`` tokens); RoPE and ALiBi encode only
            offsets between tokens and have no end, so there it is only the first size of RoPE's tables.
        pad_id: the padding id: padded tokens are masked as attention keys (and never generated by the
            encoder-decoder's decoding). ``None`` (one-stack families only): no padding mask, every id a token.
        positional: ``"sinusoidal"`` (§3.5), ``"learned"`` (BERT, GPT; the table starts at N(0, 1/2), the size
            of the sinusoidal table, see ``LEARNED_POSITION_STD``), ``"rope"`` (Su et al. 2021) or ``"alibi"``
            (Press et al. 2022: a per-head distance penalty on the scores, no position vectors); the last two
            act in self-attention only, never across two sequences. ALiBi is defined for causal attention
            (its bias penalises past keys only), so only :class:`DecoderOnlyConfig` accepts it.
        norm_first: ``False`` post-norm (the paper), ``True`` pre-norm (Xiong et al. 2020).
        activation: FFN activation, ``"relu"`` (paper) or ``"gelu"`` (BERT, GPT).
        final_norm: one LayerNorm after each stack. ``None`` (default): exactly when ``norm_first`` (a pre-norm
            stack never normalises its residual stream; a post-norm one already ends in a LayerNorm).
        bias: biases in the blocks' linear maps and LayerNorms (the output layer keeps its bias).
        tie_embeddings: the output layer shares the (target) embedding matrix, V·D fewer parameters (§3.4; Press
            & Wolf 2017). The paper ties; the default does not, so chapter 09 can count both.
        init: ``"xavier"`` or ``"torch"``, see :func:`init_weights`.

    Raises:
        TypeError: a size that is not an int, a flag that is not a bool, a dropout that is not a number.
        ValueError: a size below 1, D not a multiple of H, an odd head width with RoPE, ALiBi in a family with
            bidirectional attention, dropout outside
            ``[0, 1)``, an unknown ``positional``/``activation``/``init``, a ``pad_id`` outside a vocabulary.
    """

    d_model: int = 512
    num_heads: int = 8
    d_ff: int = 2048
    dropout: float = 0.1
    max_len: int = 512
    pad_id: int | None = 0
    positional: Positional = "sinusoidal"
    norm_first: bool = False
    activation: Activation = "relu"
    final_norm: bool | None = None
    bias: bool = True
    tie_embeddings: bool = False
    init: InitScheme = "xavier"

    causal: ClassVar[bool] = False  # whether every self-attention of the family is causal (ALiBi needs it)
    activations: ClassVar[tuple[str, ...]] = ("relu", "gelu")  # the FFN activations the family's blocks have

    def _sizes(self) -> dict[str, int]:
        """The family's own sizes (vocabularies, layer counts), checked with the shared ones."""
        return {}

    def __post_init__(self) -> None:
        sizes = {**self._sizes(), "d_model": self.d_model, "num_heads": self.num_heads, "d_ff": self.d_ff,
                 "max_len": self.max_len}  # fmt: skip
        _check_sizes(self.pad_id, **sizes)
        check_divisible("d_model", self.d_model, "num_heads", self.num_heads)
        check_probability("dropout", self.dropout)
        check_choice("positional", self.positional, ("sinusoidal", "learned", *RELATIVE_POSITIONS))
        check_choice("activation", self.activation, self.activations)
        check_choice("init", self.init, ("xavier", "torch"))
        if self.positional == "rope" and (self.d_model // self.num_heads) % 2:
            raise ValueError(f"positional: 'rope' rotates pairs of features, expected an even head width "
                             f"Dh = d_model / num_heads, got {self.d_model // self.num_heads}")
        if self.positional == "alibi" and not self.causal:
            raise ValueError(f"positional: 'alibi' penalises past keys only and needs causal attention, expected "
                             f"one of 'sinusoidal', 'learned', 'rope' for {type(self).__name__}, got 'alibi'")
        for name in ("norm_first", "bias", "tie_embeddings"):
            check_bool(name, getattr(self, name))
        if self.final_norm is not None:
            check_type("final_norm", self.final_norm, bool, "a bool or None")
        plain_numbers(self)  # np.int64(64) is accepted, stored as 64

    @property
    def position_limit(self) -> int | None:
        """The longest input (cached + new tokens) the positions take: ``max_len`` for learned or sinusoidal
        positions, ``None`` for RoPE and ALiBi, which encode offsets between tokens only and have no end.

        The one rule that the models' checks and generation (:mod:`tformer.decoding`) read.
        """
        return None if self.positional in RELATIVE_POSITIONS else self.max_len

    @property
    def has_final_norm(self) -> bool:
        """Whether each stack ends with a LayerNorm (``final_norm``, or by default ``norm_first``)."""
        return self.norm_first if self.final_norm is None else self.final_norm


@dataclass(frozen=True)
class TransformerConfig(ModelConfig):
    """Settings of the encoder-decoder :class:`Transformer` (Vaswani et al. 2017).

    Attributes:
        src_vocab_size, tgt_vocab_size: V_src, V_tgt (positional arguments).
        num_encoder_layers, num_decoder_layers: stack depths (paper: 6 each).
        share_embeddings: the source and target embeddings are one V x D matrix (V_src must equal V_tgt: one
            vocabulary for both languages, e.g. a shared BPE vocabulary). With ``tie_embeddings`` as well, that
            matrix is also the output layer's weight: the paper's three-way sharing, "we share the same weight
            matrix between the two embedding layers and the pre-softmax linear transformation" (Vaswani et al.
            2017, §3.4, following Press & Wolf 2017, "Using the Output Embedding to Improve Language Models").
            Off by default.
        Every other field: see :class:`ModelConfig`; ``pad_id`` must be an id of both vocabularies (decoding
        pads finished rows with it), so ``None`` is refused here.

    Raises:
        TypeError / ValueError: as :class:`ModelConfig`; ValueError if ``share_embeddings`` and the two
            vocabulary sizes differ.
    """

    src_vocab_size: int
    tgt_vocab_size: int
    _: KW_ONLY
    num_encoder_layers: int = 6
    num_decoder_layers: int = 6
    share_embeddings: bool = False

    def _sizes(self) -> dict[str, int]:
        if self.pad_id is None:
            raise ValueError("pad_id: expected an id in both vocabularies (decoding pads with it), got None")
        check_bool("share_embeddings", self.share_embeddings)
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(
                f"share_embeddings: expected one vocabulary for both sides (src_vocab_size == tgt_vocab_size), "
                f"got {self.src_vocab_size} and {self.tgt_vocab_size}"
            )
        return {"src_vocab_size": self.src_vocab_size, "tgt_vocab_size": self.tgt_vocab_size,
                "num_encoder_layers": self.num_encoder_layers, "num_decoder_layers": self.num_decoder_layers}


@dataclass(frozen=True)
class DecoderOnlyConfig(ModelConfig):
    """Settings of the GPT-style :class:`DecoderOnlyTransformer`.

    Attributes:
        vocab_size: V (the positional argument).
        num_layers: blocks in the stack (default 6, as the paper's decoder).
        Every other field: see :class:`ModelConfig`.

    Raises:
        TypeError / ValueError: as :class:`ModelConfig`.
    """

    vocab_size: int
    _: KW_ONLY
    num_layers: int = 6
    causal: ClassVar[bool] = True

    def _sizes(self) -> dict[str, int]:
        return {"vocab_size": self.vocab_size, "num_layers": self.num_layers}


@dataclass(frozen=True)
class EncoderOnlyConfig(ModelConfig):
    """Settings of the BERT-style :class:`EncoderOnlyTransformer`.

    Attributes:
        vocab_size: V (the positional argument).
        num_layers: blocks in the stack (default 6, as the paper's encoder).
        num_classes: size of the classification head; ``None`` for no head.
        Every other field: see :class:`ModelConfig`.

    Raises:
        TypeError / ValueError: as :class:`ModelConfig`, or if ``num_classes`` is not a positive int.
    """

    vocab_size: int
    _: KW_ONLY
    num_layers: int = 6
    num_classes: int | None = None

    def _sizes(self) -> dict[str, int]:
        sizes = {"vocab_size": self.vocab_size, "num_layers": self.num_layers}
        return sizes if self.num_classes is None else {**sizes, "num_classes": self.num_classes}


_Config = TypeVar("_Config", bound=ModelConfig)


def as_config(cls: type[_Config], args: tuple[Any, ...], settings: dict[str, Any]) -> _Config:
    """The config a model's ``__init__`` was given: ``Model(config)``, ``Model(config, field=...)`` (a changed
    copy) or ``Model(vocab..., field=...)`` (a new ``cls``).

    Raises:
        TypeError: a config of another family, or more than one positional argument after a config; and what
            ``cls`` raises.
    """
    if args and isinstance(args[0], ModelConfig):
        if not isinstance(args[0], cls) or len(args) > 1:
            raise TypeError(f"config: expected one {cls.__name__} (and keyword changes), got "
                            f"{', '.join(type(a).__name__ for a in args)}")
        return dataclasses.replace(args[0], **settings) if settings else args[0]
    return cls(*args, **settings)


def _stack_settings(config: ModelConfig) -> dict[str, Any]:
    """The keyword arguments :class:`Encoder` and :class:`Decoder` take from a config."""
    return dict(d_model=config.d_model, num_heads=config.num_heads, d_ff=config.d_ff, dropout=config.dropout,
                norm_first=config.norm_first, activation=config.activation, bias=config.bias,
                final_norm=config.has_final_norm, alibi=config.positional == "alibi")


def _positions(config: ModelConfig) -> tuple[nn.Module | None, RotaryEmbedding | None]:
    """The additive position module (sinusoidal or learned), or the rotary embedding for self-attention.

    ALiBi has neither (``(None, None)``): its bias is added inside self-attention (``alibi=True``).
    """
    if config.positional == "learned":
        return LearnedPositionalEmbedding(config.max_len, config.d_model, std=LEARNED_POSITION_STD), None
    if config.positional == "sinusoidal":
        return SinusoidalPositionalEncoding(config.d_model, max_len=config.max_len), None
    if config.positional == "alibi":
        return None, None
    return None, RotaryEmbedding(config.d_model // config.num_heads, max_len=config.max_len)


@dataclass
class TransformerOutput:
    """Logits plus every attention map of one :class:`Transformer` forward pass (for heatmaps).

    Attributes:
        logits: ``(B, L, V_tgt)``.
        encoder_attention: per encoder layer, self-attention weights ``(B, H, S, S)``.
        decoder_self_attention: per decoder layer, masked self-attention weights ``(B, H, L, L)``.
        cross_attention: per decoder layer, weights ``(B, H, L, S)``: row l says which source tokens the
            target position l read from.
    """

    logits: Tensor
    encoder_attention: list[Tensor]
    decoder_self_attention: list[Tensor]
    cross_attention: list[Tensor]


class Transformer(nn.Module):
    """The encoder-decoder Transformer of Vaswani et al. 2017 (§3, Figure 1).

    Build it from a :class:`TransformerConfig`, or let the keywords build one::

        Transformer(TransformerConfig(V_src, V_tgt, d_model=64))  # or Transformer.from_config(config)
        Transformer(V_src, V_tgt, d_model=64)                      # the same model
        Transformer(config, dropout=0.0)                            # a changed copy of config

    ``model.config`` is the config it was built from; every setting is read from there.

    Shape:
        ``forward(src (B, S), tgt_in (B, L)) -> logits (B, L, V_tgt)``.

    Raises:
        TypeError / ValueError: as :class:`TransformerConfig`.
    """

    def __init__(self, *args: Any, **settings: Any) -> None:
        super().__init__()
        self.config: TransformerConfig = as_config(TransformerConfig, args, settings)
        config = self.config
        self.src_embed = nn.Embedding(config.src_vocab_size, config.d_model)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, config.d_model)
        # one position module for both sequences: a fixed table, or one learned table of max_len rows
        self.positional, rope = _positions(config)
        self.dropout = nn.Dropout(config.dropout)
        # rope reaches the self-attention of both stacks, never the decoder's cross-attention
        self.encoder = Encoder(config.num_encoder_layers, **_stack_settings(config), rope=rope)
        self.decoder = Decoder(config.num_decoder_layers, **_stack_settings(config), rope=rope)
        # encode and decode check the tokens (and caches) once; what they call runs trusted
        self.output = nn.Linear(config.d_model, config.tgt_vocab_size)
        init_weights(self, config.init)
        if config.share_embeddings:  # §3.4: one matrix embeds both languages
            self.src_embed.weight = self.tgt_embed.weight
        if config.tie_embeddings:  # ... and scores the next token (Press & Wolf 2017)
            self.output.weight = self.tgt_embed.weight

    @classmethod
    def from_config(cls, config: TransformerConfig) -> Transformer:
        """Build the model ``config`` describes (the same as ``Transformer(config)``)."""
        return cls(config)

    @property
    def pad_id(self) -> int:
        """The padding id of both vocabularies (decoding reads it)."""
        assert self.config.pad_id is not None  # TransformerConfig refuses None
        return self.config.pad_id

    @property
    def max_len(self) -> int:
        """The longest input the positions cover (see :class:`ModelConfig`)."""
        return self.config.max_len

    @property
    def d_model(self) -> int:
        """D."""
        return self.config.d_model

    @property
    def src_vocab_size(self) -> int:
        """V_src."""
        return self.config.src_vocab_size

    @property
    def tgt_vocab_size(self) -> int:
        """V_tgt."""
        return self.config.tgt_vocab_size

    def _embed(self, embedding: nn.Embedding, tokens: Tensor, offset: int) -> Tensor:
        x = embedding(tokens) * math.sqrt(self.config.d_model)  # (B, L, D)
        if self.positional is not None:
            x = self.positional(x, offset, checked=True)  # (B, L, D)
        return self.dropout(x)

    @property
    def position_limit(self) -> int | None:
        """The longest sequence the positions take, ``None`` for RoPE (``config.position_limit``)."""
        return self.config.position_limit

    def _encode(self, src: Tensor) -> tuple[Tensor, Tensor, list[Tensor]]:
        src_padding = src != self.pad_id  # (B, S) True at real tokens
        x = self._embed(self.src_embed, src, 0)  # (B, S, D)
        memory, weights = self.encoder(x, src_padding[:, None, None, :], checked=True)  # (B, S, D); mask (B, 1, 1, S)
        return memory, src_padding, weights

    def encode(self, src: Tensor) -> Tensor:
        """Run the encoder. Shape: ``src (B, S) -> memory (B, S, D)``. Raises ValueError/TypeError on bad ``src``."""
        check_tokens("src", src, self.config.src_vocab_size, self.position_limit)
        return self._encode(src)[0]

    def new_cache(self) -> list[tuple[KVCache, KVCache]]:
        """Empty key/value caches for :meth:`decode` (per decoder layer: self-attention, cross-attention)."""
        return self.decoder.new_cache()

    def _decode(
        self, tgt_in: Tensor, memory: Tensor, src_padding: Tensor | None, cache: list | None
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        past = 0 if cache is None else len(cache[0][0])
        L = tgt_in.shape[1]
        if cache is None:  # teacher forcing: causal, and padded target keys hidden too
            self_mask = causal_mask(L, device=tgt_in.device) & (tgt_in != self.pad_id)[:, None, None, :]  # (B, 1, L, L)
        else:  # new positions see every cached one and the earlier new ones
            self_mask = causal_mask(L, past + L, device=tgt_in.device) if L > 1 else None
        memory_mask = None if src_padding is None else src_padding[:, None, None, :]  # (B, 1, 1, S)
        y = self._embed(self.tgt_embed, tgt_in, past)  # (B, L, D)
        y, self_w, cross_w = self.decoder(y, memory, self_mask, memory_mask, cache=cache, checked=True)  # (B, L, D)
        return self.output(y), self_w, cross_w  # (B, L, V_tgt)

    def decode(
        self, tgt_in: Tensor, memory: Tensor, src_padding: Tensor | None = None, *,
        cache: list[tuple[KVCache, KVCache]] | None = None,
    ) -> Tensor:
        """Run the decoder on target tokens given the encoder memory.

        Args:
            tgt_in: ``(B, L)`` decoder input (``[BOS, y1, …]``); with a cache, only the new tokens.
            memory: ``(B, S, D)`` from :meth:`encode`.
            src_padding: ``(B, S)`` bool, True at real source tokens (``src != pad_id``); None = no padding.
            cache: from :meth:`new_cache`; keys/values of earlier positions are reused and extended.

        Returns:
            logits ``(B, L, V_tgt)``.

        Raises:
            TypeError/ValueError: on bad ``tgt_in`` (as :meth:`forward`), a ``memory`` whose batch differs from
            ``tgt_in``'s, or a ``src_padding`` not of shape ``(B, S)``; a ``cache`` that is not as
            :meth:`new_cache` makes it, or was filled by another model (another batch, memory length, number or
            width of heads, or, outside autocast, dtype: ValueError naming ``cache[i]``).
        """
        wanted = "one (self, cross) KVCache pair per layer (see new_cache)"
        check_cache_count(cache, len(self.decoder.layers), wanted, kinds=(False, True))  # before cache[0] is read
        past = 0 if cache is None else len(cache[0][0])
        B = check_tokens("tgt_in", tgt_in, self.config.tgt_vocab_size, self.position_limit, offset=past).shape[0]
        check_activation("memory", memory, "(B, S, D)", self.output.weight, B=B, D=self.d_model)  # from encode()
        # a filled cache must come from this batch and this memory: the stack below trusts it
        heads = (self.config.num_heads, self.d_model // self.config.num_heads)  # (H, Dh)
        check_cache_count(cache, len(self.decoder.layers), wanted, kinds=(False, True), batch=B,
                          memory_length=memory.shape[1], heads=heads, weight=self.output.weight)
        if src_padding is not None:
            check_tensor("src_padding", src_padding, "bool", "(B, S)", B=B, S=memory.shape[1])
        return self._decode(tgt_in, memory, src_padding, cache)[0]

    def forward(self, src: Tensor, tgt_in: Tensor, *, return_attention: bool = False) -> Tensor | TransformerOutput:
        """Teacher-forced pass: ``src (B, S), tgt_in (B, L) -> logits (B, L, V_tgt)``.

        With ``return_attention=True`` returns a :class:`TransformerOutput` holding the logits and every
        attention map (``out.cross_attention[layer][b, head]`` is an ``(L, S)`` heatmap).

        Raises:
            TypeError: if ``src``/``tgt_in`` are not integer tensors.
            ValueError: if they are not 2-D, differ in batch size, are longer than ``max_len`` (learned or
                sinusoidal positions), or hold ids outside the vocabulary.
        """
        check_flags(return_attention=return_attention)
        if isinstance(src, Tensor) and isinstance(tgt_in, Tensor) and src.dim() == tgt_in.dim() == 2 and (
            src.shape[0] != tgt_in.shape[0]
        ):
            raise ValueError(f"src, tgt_in: expected one batch size B, got src {tuple(src.shape)}, "
                             f"tgt_in {tuple(tgt_in.shape)}")
        check_tokens("src", src, self.config.src_vocab_size, self.position_limit)
        check_tokens("tgt_in", tgt_in, self.config.tgt_vocab_size, self.position_limit)
        memory, src_padding, enc_w = self._encode(src)
        logits, self_w, cross_w = self._decode(tgt_in, memory, src_padding, None)
        if return_attention:
            return TransformerOutput(logits, enc_w, self_w, cross_w)
        return logits

    def greedy_decode(self, src: Tensor, max_len: int, bos_id: int, eos_id: int, *, use_cache: bool = True) -> Tensor:
        """See :func:`tformer.decoding.greedy_decode`. Shape: ``src (B, S) -> (B, ≤ max_len)``."""
        return greedy_decode(self, src, max_len, bos_id, eos_id, use_cache=use_cache)

    def beam_search(
        self, src: Tensor, beam_size: int, max_len: int, bos_id: int, eos_id: int, *, length_penalty: float = 0.6
    ) -> Tensor:
        """See :func:`tformer.decoding.beam_search`. Shape: ``src (B, S) -> (B, ≤ max_len)``."""
        return beam_search(self, src, beam_size, max_len, bos_id, eos_id, length_penalty=length_penalty)


def _check_stack_cache(cache: object, layers: int, batch: int | None = None,
                       heads: tuple[int, int] | None = None, weight: Tensor | None = None) -> None:
    """``cache`` of a one-stack model with ``layers`` layers: ``None`` or one :class:`KVCache` per layer, as
    ``new_cache()`` makes it, filled (if at all) with ``batch`` rows, ``heads = (H, Dh)`` and keys in the dtype
    of ``weight`` (the model's parameters).

    Raises:
        TypeError: ``cache: expected a list of 2 KVCache (model.new_cache()), got tuple`` (an encoder–decoder
            cache, ``[None]``, a list of pairs). ValueError: a list of another length (``[]``), one cache listed
            twice, caches of different shapes, or of another batch, heads or dtype (as
            :func:`~tformer._checks.check_cache_count`).
    """
    if cache is None:
        return
    wanted = f"a list of {layers} KVCache (model.new_cache())"
    if not isinstance(cache, list):
        raise TypeError(f"cache: expected {wanted}, got {type(cache).__name__}")
    for i, item in enumerate(cache):
        if not isinstance(item, KVCache):  # e.g. an encoder-decoder cache's (self, cross) pairs
            raise TypeError(f"cache[{i}]: expected a KVCache ({wanted}), got {type(item).__name__}")
    if len(cache) != layers:
        raise ValueError(f"cache: expected {wanted}, got a list of {len(cache)}")
    check_cache_count(cache, layers, wanted, batch=batch, heads=heads, weight=weight)  # each its own, one shape


class _TokenStack(nn.Module):
    """Embedding (× √D) + positions + dropout + an :class:`Encoder` stack: the body of the one-stack families."""

    def __init__(self, config: DecoderOnlyConfig | EncoderOnlyConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.positional, rope = _positions(config)
        self.dropout = nn.Dropout(config.dropout)
        self.encoder = Encoder(config.num_layers, **_stack_settings(config), rope=rope)

    def check(self, tokens: Tensor, cache: list[KVCache] | None = None) -> None:
        """The models' checks of their input, once, before :meth:`forward` runs unchecked."""
        batch = tokens.shape[0] if isinstance(tokens, Tensor) and tokens.dim() == 2 else None  # else check_tokens says
        heads = (self.config.num_heads, self.config.d_model // self.config.num_heads)  # (H, Dh)
        weight = self.encoder.layers[0].self_attn.w_q.weight  # a filled cache must hold keys of its dtype
        _check_stack_cache(cache, len(self.encoder.layers), batch, heads, weight)  # before cache[0] is read
        past = 0 if cache is None else len(cache[0])
        tokens = check_tokens("tokens", tokens, self.config.vocab_size, self.config.position_limit, offset=past)
        pad_id = self.config.pad_id
        # Cached keys carry no padding mask. Read only where values are cheap, as check_tokens reads the ids:
        # elsewhere this would be a host-device sync on every generated token.
        if cache is not None and pad_id is not None and values_are_cheap(tokens):
            padded = int((tokens == pad_id).sum())
            if padded:
                raise ValueError(f"tokens: expected no padding (pad_id={pad_id}) when a cache is given: cached keys "
                                 f"carry no padding mask, so padded positions would be attended to; got {padded} "
                                 "padded positions (call without a cache)")  # fmt: skip

    def forward(
        self, tokens: Tensor, *, causal: bool, cache: list[KVCache] | None = None
    ) -> tuple[Tensor, list[Tensor]]:
        config = self.config
        past = 0 if cache is None else len(cache[0])
        L = tokens.shape[1]
        mask = causal_mask(L, past + L, device=tokens.device) if causal and L > 1 else None  # (L, S)
        if config.pad_id is not None and cache is None:  # with a cache the keys are earlier steps' tokens
            padding = (tokens != config.pad_id)[:, None, None, :]  # (B, 1, 1, S)
            mask = padding if mask is None else mask & padding
        x = self.embed(tokens) * math.sqrt(config.d_model)  # (B, L, D)
        if self.positional is not None:
            x = self.positional(x, past, checked=True)  # (B, L, D)
        positions = torch.arange(past, past + L, device=tokens.device)  # (L,) used by RoPE
        return self.encoder(self.dropout(x), mask, cache=cache, positions=positions, checked=True)


class DecoderOnlyTransformer(CachedGenerationMixin, nn.Module):
    """A GPT-style language model: causal self-attention blocks, no encoder (Radford et al. 2018).

    Build it from a :class:`DecoderOnlyConfig` (``DecoderOnlyTransformer(config)``,
    ``DecoderOnlyTransformer.from_config(config)``) or from the config's fields as arguments
    (``DecoderOnlyTransformer(V, num_layers=2)``); ``model.config`` is the config. Padded keys
    (``config.pad_id``) are masked in a forward pass without a cache; with a cache, tokens holding ``pad_id``
    are refused where their values are read (on a CPU, outside ``torch.compile``: cached keys carry no padding
    mask).

    Shape:
        ``forward(tokens (B, L)) -> logits (B, L, V)``; position l sees tokens 0..l only.

    Raises:
        TypeError / ValueError: as :class:`DecoderOnlyConfig`.
    """

    def __init__(self, *args: Any, **settings: Any) -> None:
        super().__init__()
        self.config: DecoderOnlyConfig = as_config(DecoderOnlyConfig, args, settings)
        self.body = _TokenStack(self.config)
        self.output = nn.Linear(self.config.d_model, self.config.vocab_size)
        init_weights(self, self.config.init)
        if self.config.tie_embeddings:
            self.output.weight = self.body.embed.weight

    @classmethod
    def from_config(cls, config: DecoderOnlyConfig) -> DecoderOnlyTransformer:
        """Build the model ``config`` describes (the same as ``DecoderOnlyTransformer(config)``)."""
        return cls(config)

    @property
    def max_len(self) -> int:
        """The longest input the positions cover (see :class:`ModelConfig`)."""
        return self.config.max_len

    def new_cache(self) -> list[KVCache]:
        """Empty key/value caches, one per layer, for ``forward(..., cache=...)``."""
        return [KVCache() for _ in self.body.encoder.layers]

    def forward(
        self, tokens: Tensor, *, cache: list[KVCache] | None = None, return_attention: bool = False
    ) -> Tensor | tuple[Tensor, list[Tensor]]:
        """Next-token logits for every position.

        Args:
            tokens: ``(B, L)`` ids; with a ``cache``, only the new tokens (positions continue after the cache).
            cache: from :meth:`new_cache`; extended in place.
            return_attention: also return per-layer weights ``(B, H, L, S)``.

        Returns:
            logits ``(B, L, V)`` (and the weights list).

        Raises:
            TypeError/ValueError: non-integer tokens, ids outside the vocabulary, (learned or sinusoidal
            positions) more than ``max_len`` positions in total, or a ``cache`` that is not one
            :class:`~tformer.attention.KVCache` per layer as :meth:`new_cache` makes it (``[]``, ``[None]``, an
            encoder–decoder model's cache) or was filled by another model (another batch, number or width of
            heads, or, outside autocast, a dtype it cannot widen to the model's: ValueError naming ``cache[i]``);
            ValueError if ``tokens`` holds ``pad_id`` when a ``cache`` is given (read on a CPU, as the ids are).
        """
        check_flags(return_attention=return_attention)
        self.body.check(tokens, cache)
        x, weights = self.body(tokens, causal=True, cache=cache)  # (B, L, D)
        logits = self.output(x)  # (B, L, V)
        return (logits, weights) if return_attention else logits

    @property
    def vocab_size(self) -> int:
        """V, the vocabulary size (``config.vocab_size``)."""
        return self.config.vocab_size

    @property
    def pad_id(self) -> int | None:
        """The padding id (``config.pad_id``), never generated."""
        return self.config.pad_id

    @property
    def position_limit(self) -> int | None:
        """The context ``generate`` keeps (``config.position_limit``): ``max_len`` tokens for learned or sinusoidal
        positions, all for RoPE and ALiBi."""
        return self.config.position_limit


class EncoderOnlyTransformer(nn.Module):
    """A BERT-style bidirectional encoder with a masked-token output and a classification head (Devlin et al. 2019).

    Every position sees every other (only padding is masked), so it cannot generate left to right; it is trained
    to fill in masked tokens (``forward``) and, through the first token's pooled vector, to classify
    (``classify``). Its body and output layer are the decoder-only model's, without the causal mask (BERT adds
    a dense + GELU + LayerNorm transform before its output layer; it is left out so that the two one-stack
    families differ in the mask alone).

    Build it as :class:`DecoderOnlyTransformer`, from an :class:`EncoderOnlyConfig`.

    Shape:
        ``forward(tokens (B, L)) -> (B, L, V)``; ``classify(tokens (B, L)) -> (B, num_classes)``.

    Raises:
        TypeError / ValueError: as :class:`EncoderOnlyConfig`.
    """

    def __init__(self, *args: Any, **settings: Any) -> None:
        super().__init__()
        self.config: EncoderOnlyConfig = as_config(EncoderOnlyConfig, args, settings)
        config = self.config
        self.body = _TokenStack(config)
        self.output = nn.Linear(config.d_model, config.vocab_size)
        self.pooler = nn.Sequential(nn.Linear(config.d_model, config.d_model), nn.Tanh())
        self.classifier = None if config.num_classes is None else nn.Linear(config.d_model, config.num_classes)
        init_weights(self, config.init)
        if config.tie_embeddings:
            self.output.weight = self.body.embed.weight

    @classmethod
    def from_config(cls, config: EncoderOnlyConfig) -> EncoderOnlyTransformer:
        """Build the model ``config`` describes (the same as ``EncoderOnlyTransformer(config)``)."""
        return cls(config)

    @property
    def pad_id(self) -> int | None:
        """The padding id masked as a key (``None``: no padding)."""
        return self.config.pad_id

    @property
    def max_len(self) -> int:
        """The longest input the positions cover (see :class:`ModelConfig`)."""
        return self.config.max_len

    def encode(self, tokens: Tensor, *, return_attention: bool = False) -> Tensor | tuple[Tensor, list[Tensor]]:
        """Contextual vectors ``(B, L, D)`` (and per-layer weights ``(B, H, L, L)``); padded keys are masked."""
        check_flags(return_attention=return_attention)
        self.body.check(tokens)
        hidden, weights = self.body(tokens, causal=False)  # (B, L, D)
        return (hidden, weights) if return_attention else hidden

    def forward(self, tokens: Tensor) -> Tensor:
        """Masked-token logits: ``tokens (B, L) -> (B, L, V)``."""
        return self.output(self.encode(tokens))

    def classify(self, tokens: Tensor) -> Tensor:
        """Sequence-class logits from the pooled first token: ``tokens (B, L) -> (B, num_classes)``.

        Raises:
            ValueError: if the model was built with ``num_classes=None``.
        """
        if self.classifier is None:
            raise ValueError("num_classes: expected a model with a classification head, got num_classes=None")
        hidden = self.encode(tokens)  # (B, L, D)
        return self.classifier(self.pooler(hidden[:, 0]))  # (B, num_classes)
