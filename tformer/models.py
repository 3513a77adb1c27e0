"""The three Transformer families on one set of blocks: encoder-decoder, decoder-only, encoder-only.

Introduced in ``10_encoder_decoder`` (:class:`Transformer`, Vaswani et al. 2017) and ``11_three_families``
(:class:`DecoderOnlyTransformer`, GPT-style; :class:`EncoderOnlyTransformer`, BERT-style). What separates the
families is mostly the mask: the encoder sees the whole sequence, the decoder only the past.

Token embeddings are multiplied by √D before positions are added (§3.4). Weights start from Xavier-uniform, as
in torch's ``nn.Transformer`` (see :func:`init_weights`).

Dimension letters: B batch, S source length, L target length, D ``d_model``, H heads, V vocabulary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from tformer._checks import check_int
from tformer.attention import KVCache
from tformer.decoding import beam_search, greedy_decode, sample_next_token
from tformer.layers import Decoder, Encoder
from tformer.masks import as_key_padding, causal_mask
from tformer.positional import LearnedPositionalEmbedding, RotaryEmbedding, SinusoidalPositionalEncoding

__all__ = [
    "CachedGenerationMixin",
    "DecoderOnlyTransformer",
    "EncoderOnlyTransformer",
    "Transformer",
    "TransformerOutput",
    "init_weights",
]


def init_weights(model: nn.Module, scheme: Literal["xavier", "torch"] = "xavier") -> None:
    """Re-initialise ``model`` in place.

    ``"xavier"``: every parameter with two or more dimensions (linear maps, embeddings) from Xavier-uniform
    (Glorot & Bengio 2010), as ``torch.nn.Transformer._reset_parameters`` and the Annotated Transformer do; an
    embedding (V, D) then has std ≈ √(2/(V+D)), so √D-scaled embeddings have roughly unit size, comparable to
    the sinusoidal positions. ``"torch"``: keep PyTorch's per-layer defaults (Kaiming-uniform linears,
    N(0, 1) embeddings — about √D ≈ 11 after the √D scaling, swamping the positions).

    It matters at small scale. Measured on the running-example corpus (D=128, H=4, 2+2 layers, F=256, batch 64,
    Adam 1e-3 with 100 warm-up steps, one seed), validation loss after 240 steps: xavier 0.27 (post-norm) /
    0.17 (pre-norm); torch defaults 0.83 (post-norm) / 1.69 (pre-norm).

    Raises:
        ValueError: on an unknown ``scheme``.
    """
    if scheme not in ("xavier", "torch"):
        raise ValueError(f"scheme: expected 'xavier' or 'torch', got {scheme!r}")
    if scheme == "xavier":
        for p in model.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)


def _check_tokens(name: str, tokens: Tensor, vocab_size: int, max_len: int, offset: int = 0) -> None:
    """Validate a (B, L) integer token tensor; ``offset`` counts positions already cached."""
    if not isinstance(tokens, Tensor) or tokens.dtype not in (torch.int64, torch.int32):
        got = tokens.dtype if isinstance(tokens, Tensor) else type(tokens).__name__
        raise TypeError(f"{name}: expected an integer tensor (int64 or int32) of token ids (B, L), got {got}")
    if tokens.dim() != 2 or tokens.shape[1] == 0:
        raise ValueError(f"{name}: expected shape (B, L) with L >= 1, got {tuple(tokens.shape)}")
    if offset + tokens.shape[1] > max_len:
        raise ValueError(
            f"{name}: length {tokens.shape[1]} (+ {offset} cached) exceeds the model's max_len={max_len}"
        )
    if tokens.numel() == 0:  # B = 0: nothing to check
        return
    low, high = int(tokens.min()), int(tokens.max())
    if low < 0 or high >= vocab_size:
        raise ValueError(f"{name}: token ids must lie in [0, {vocab_size}), got min {low}, max {high}")


def _check_sizes(pad_id: int | None = None, **sizes: object) -> None:
    """Every size a positive int; ``pad_id`` (when given) a valid id of every vocabulary among ``sizes``."""
    for name, value in sizes.items():
        check_int(name, value, 1)
    if pad_id is not None:
        vocab = min(v for k, v in sizes.items() if k.endswith("vocab_size"))
        if isinstance(pad_id, bool) or not isinstance(pad_id, int) or not 0 <= pad_id < vocab:
            raise ValueError(f"pad_id: expected an id in [0, {vocab}) (inside every vocabulary), got {pad_id!r}")


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

    Args:
        src_vocab_size, tgt_vocab_size: vocabulary sizes V_src, V_tgt.
        d_model, num_heads, num_encoder_layers, num_decoder_layers, d_ff: sizes (defaults: the paper's base).
        dropout: one rate for embeddings+positions, attention weights and residual branches (paper: 0.1).
        max_len: longest source or target sequence accepted.
        pad_id: padding id in both vocabularies; padded source keys are masked everywhere.
        norm_first: ``False`` post-norm (the paper), ``True`` pre-norm (see :mod:`tformer.layers`).
        tie_embeddings: share the target embedding matrix with the output projection (§3.4).
        activation: FFN activation, ``"relu"`` (paper) or ``"gelu"``.
        init: ``"xavier"`` or ``"torch"``, see :func:`init_weights`.

    Shape:
        ``forward(src (B, S), tgt_in (B, L)) -> logits (B, L, V_tgt)``.

    Raises:
        ValueError: if ``d_model`` is not divisible by ``num_heads``, a size is not positive, or ``pad_id`` is
            not an id of both vocabularies. TypeError: if a size is not an int.
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        d_model: int = 512,
        num_heads: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        d_ff: int = 2048,
        dropout: float = 0.1,
        max_len: int = 512,
        pad_id: int = 0,
        norm_first: bool = False,
        *,
        tie_embeddings: bool = False,
        activation: str = "relu",
        init: Literal["xavier", "torch"] = "xavier",
    ) -> None:
        super().__init__()
        _check_sizes(pad_id, src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, d_model=d_model,
                     num_heads=num_heads, max_len=max_len)
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.src_vocab_size, self.tgt_vocab_size = src_vocab_size, tgt_vocab_size
        self.d_model, self.max_len, self.pad_id = d_model, max_len, pad_id
        self.src_embed = nn.Embedding(src_vocab_size, d_model)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, d_model)
        self.positional = SinusoidalPositionalEncoding(d_model, max_len=max_len, dropout=dropout)
        self.encoder = Encoder(num_encoder_layers, d_model, num_heads, d_ff, dropout, norm_first,
                               activation=activation)
        self.decoder = Decoder(num_decoder_layers, d_model, num_heads, d_ff, dropout, norm_first,
                               activation=activation)
        self.output = nn.Linear(d_model, tgt_vocab_size)
        init_weights(self, init)
        if tie_embeddings:
            self.output.weight = self.tgt_embed.weight

    def _encode(self, src: Tensor) -> tuple[Tensor, Tensor, list[Tensor]]:
        _check_tokens("src", src, self.src_vocab_size, self.max_len)
        src_padding = src != self.pad_id  # (B, S) True at real tokens
        x = self.positional(self.src_embed(src) * math.sqrt(self.d_model))  # (B, S, D)
        memory, weights = self.encoder(x, as_key_padding(src_padding))  # (B, S, D)
        return memory, src_padding, weights

    def encode(self, src: Tensor) -> Tensor:
        """Run the encoder. Shape: ``src (B, S) -> memory (B, S, D)``. Raises ValueError/TypeError on bad ``src``."""
        return self._encode(src)[0]

    def new_cache(self) -> list[tuple[KVCache, KVCache]]:
        """Empty key/value caches for :meth:`decode` (per decoder layer: self-attention, cross-attention)."""
        return self.decoder.new_cache()

    def _decode(
        self, tgt_in: Tensor, memory: Tensor, src_padding: Tensor | None, cache: list | None
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        past = 0 if cache is None else len(cache[0][0])
        _check_tokens("tgt_in", tgt_in, self.tgt_vocab_size, self.max_len, offset=past)
        B, L = tgt_in.shape
        if not isinstance(memory, Tensor) or memory.dim() != 3 or memory.shape[0] != B:
            got = tuple(memory.shape) if isinstance(memory, Tensor) else type(memory).__name__
            raise ValueError(f"memory: expected (B={B}, S, D) from encode() of a batch of B={B} sources, got {got}")
        if src_padding is not None and (
            not isinstance(src_padding, Tensor) or tuple(src_padding.shape) != tuple(memory.shape[:2])
        ):
            got = tuple(src_padding.shape) if isinstance(src_padding, Tensor) else type(src_padding).__name__
            raise ValueError(f"src_padding: expected (B, S)={tuple(memory.shape[:2])} bool, got {got}")
        if cache is None:  # teacher forcing: causal, and padded target keys hidden too
            self_mask = causal_mask(L, device=tgt_in.device) & as_key_padding(tgt_in != self.pad_id)
        else:  # new positions see every cached one and the earlier new ones
            self_mask = causal_mask(L, past + L, device=tgt_in.device) if L > 1 else None
        memory_mask = None if src_padding is None else as_key_padding(src_padding)  # (B, 1, 1, S)
        y = self.positional(self.tgt_embed(tgt_in) * math.sqrt(self.d_model), offset=past)  # (B, L, D)
        y, self_w, cross_w = self.decoder(y, memory, self_mask, memory_mask, cache=cache)  # (B, L, D)
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
            ``tgt_in``'s, or a ``src_padding`` not of shape ``(B, S)``.
        """
        return self._decode(tgt_in, memory, src_padding, cache)[0]

    def forward(self, src: Tensor, tgt_in: Tensor, *, return_attention: bool = False) -> Tensor | TransformerOutput:
        """Teacher-forced pass: ``src (B, S), tgt_in (B, L) -> logits (B, L, V_tgt)``.

        With ``return_attention=True`` returns a :class:`TransformerOutput` holding the logits and every
        attention map (``out.cross_attention[layer][b, head]`` is an ``(L, S)`` heatmap).

        Raises:
            TypeError: if ``src``/``tgt_in`` are not integer tensors.
            ValueError: if they are not 2-D, differ in batch size, are longer than ``max_len``, or hold ids
                outside the vocabulary.
        """
        if isinstance(src, Tensor) and isinstance(tgt_in, Tensor) and src.dim() == tgt_in.dim() == 2 and (
            src.shape[0] != tgt_in.shape[0]
        ):
            raise ValueError(f"src, tgt_in: expected one batch size B, got src {tuple(src.shape)}, "
                             f"tgt_in {tuple(tgt_in.shape)}")
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


_Positional = Literal["learned", "sinusoidal", "rope"]


class _TokenStack(nn.Module):
    """Embedding (× √D) + positions + an :class:`Encoder` stack: the shared body of the one-stack families."""

    def __init__(
        self, vocab_size: int, d_model: int, num_heads: int, num_layers: int, d_ff: int, max_len: int,
        dropout: float, positional: str, norm_first: bool, activation: str,
    ) -> None:
        super().__init__()
        _check_sizes(vocab_size=vocab_size, d_model=d_model, num_heads=num_heads, max_len=max_len)
        if positional not in ("learned", "sinusoidal", "rope"):
            raise ValueError(f"positional: expected 'learned', 'sinusoidal' or 'rope', got {positional!r}")
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.vocab_size, self.d_model, self.max_len, self.positional_kind = vocab_size, d_model, max_len, positional
        self.embed = nn.Embedding(vocab_size, d_model)
        self.positional: nn.Module | None = None
        rope = None
        if positional == "learned":
            self.positional = LearnedPositionalEmbedding(max_len, d_model)
        elif positional == "sinusoidal":
            self.positional = SinusoidalPositionalEncoding(d_model, max_len=max_len)
        else:
            rope = RotaryEmbedding(d_model // num_heads, max_len=max_len)
        self.dropout = nn.Dropout(dropout)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, dropout, norm_first,
                               activation=activation, rope=rope)

    def forward(
        self, tokens: Tensor, *, causal: bool, pad_id: int | None = None, cache: list[KVCache] | None = None
    ) -> tuple[Tensor, list[Tensor]]:
        past = 0 if cache is None else len(cache[0])
        _check_tokens("tokens", tokens, self.vocab_size, self.max_len, offset=past)
        L = tokens.shape[1]
        mask = causal_mask(L, past + L, device=tokens.device) if causal and L > 1 else None  # (L, S)
        if pad_id is not None:
            padding = as_key_padding(tokens != pad_id)  # (B, 1, 1, S)
            mask = padding if mask is None else mask & padding
        x = self.embed(tokens) * math.sqrt(self.d_model)  # (B, L, D)
        if self.positional is not None:
            x = self.positional(x, offset=past)  # (B, L, D)
        positions = torch.arange(past, past + L, device=tokens.device)  # (L,) used by RoPE
        return self.encoder(self.dropout(x), mask, cache=cache, positions=positions)


class CachedGenerationMixin:
    """``generate`` for a causal language model with a key/value cache, shared by the decoder-only models.

    The model provides ``vocab_size`` and ``max_len`` (ints), ``new_cache()``, and
    ``__call__(tokens (B, L), *, cache=None) -> logits (B, L, V)`` that continues after what the cache holds:
    :class:`DecoderOnlyTransformer` here and :class:`tformer.variants.modern_block.ModernDecoderLM`.
    """

    vocab_size: int
    max_len: int

    @torch.no_grad()
    def generate(
        self,
        prompt: Tensor,
        max_new_tokens: int,
        *,
        use_cache: bool = True,
        temperature: float = 0.0,
        top_k: int | None = None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Extend ``prompt`` by ``max_new_tokens`` tokens, one at a time.

        ``temperature=0`` is greedy (argmax); otherwise sample from softmax(logits / temperature), optionally
        restricted to the ``top_k`` most likely tokens. With ``use_cache`` each step feeds only the newest token
        and reuses the cached keys/values; the result is the same as recomputing (test_models proves it). Call
        ``model.eval()`` first so dropout is off.

        Shape:
            ``prompt (B, P) -> (B, P + max_new_tokens)``.

        Raises:
            ValueError: if ``P + max_new_tokens > max_len`` or ``max_new_tokens < 0``; see :meth:`forward`.
            TypeError: if ``max_new_tokens`` is not an int or ``prompt`` not an integer tensor.
        """
        check_int("max_new_tokens", max_new_tokens)
        _check_tokens("prompt", prompt, self.vocab_size, self.max_len)
        if max_new_tokens < 0 or prompt.shape[-1] + max_new_tokens > self.max_len:
            raise ValueError(
                f"max_new_tokens: expected 0 <= max_new_tokens and prompt length {prompt.shape[-1]} + "
                f"max_new_tokens <= max_len={self.max_len}, got {max_new_tokens}"
            )
        tokens, step_input = prompt, prompt
        cache = self.new_cache() if use_cache else None
        for _ in range(max_new_tokens):
            logits = self(step_input if use_cache else tokens, cache=cache)[:, -1]  # (B, V)
            next_token = sample_next_token(logits, temperature, top_k, generator)[:, None]  # (B, 1)
            tokens = torch.cat([tokens, next_token], dim=1)  # (B, P + t + 1)
            step_input = next_token
        return tokens


class DecoderOnlyTransformer(CachedGenerationMixin, nn.Module):
    """A GPT-style language model: causal self-attention blocks, no encoder (Radford et al. 2018).

    Args:
        vocab_size, d_model, num_heads, num_layers, d_ff, max_len: sizes V, D, H, layers, F, longest sequence.
        dropout: one rate for embeddings, attention weights and residual branches.
        positional: ``"learned"`` (GPT-2), ``"sinusoidal"`` (Vaswani §3.5) or ``"rope"`` (Su et al. 2021).
        norm_first: pre-norm by default (GPT-2 style), which trains more easily.
        activation, init: as :class:`Transformer`.

    Shape:
        ``forward(tokens (B, L)) -> logits (B, L, V)``; position l sees tokens 0..l only.

    Raises:
        ValueError: if ``d_model`` is not divisible by ``num_heads``, a size is not positive, ``positional`` is
            unknown, or (with ``"rope"``) the head width is odd. TypeError: if a size is not an int.
    """

    def __init__(
        self, vocab_size: int, d_model: int, num_heads: int, num_layers: int, d_ff: int, max_len: int,
        dropout: float = 0.0, positional: _Positional = "learned", *, norm_first: bool = True,
        activation: str = "relu", init: Literal["xavier", "torch"] = "xavier",
    ) -> None:
        super().__init__()
        self.vocab_size, self.max_len = vocab_size, max_len
        self.body = _TokenStack(vocab_size, d_model, num_heads, num_layers, d_ff, max_len, dropout,
                                positional, norm_first, activation)
        self.output = nn.Linear(d_model, vocab_size)
        init_weights(self, init)

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
            TypeError/ValueError: non-integer tokens, ids outside the vocabulary, or more than ``max_len``
            positions in total.
        """
        x, weights = self.body(tokens, causal=True, cache=cache)  # (B, L, D)
        logits = self.output(x)  # (B, L, V)
        return (logits, weights) if return_attention else logits


class EncoderOnlyTransformer(nn.Module):
    """A BERT-style bidirectional encoder with a masked-token head and a classification head (Devlin et al. 2019).

    Every position sees every other (only padding is masked), so it cannot generate left to right; it is trained
    to fill in masked tokens (``forward``) and, through the first token's pooled vector, to classify (``classify``).

    Args:
        vocab_size, d_model, num_heads, num_layers, d_ff, max_len, dropout: as :class:`DecoderOnlyTransformer`.
        num_classes: size of the classification head; ``None`` for no head.
        pad_id: padding id, masked as a key.
        positional: ``"learned"`` (BERT), ``"sinusoidal"`` or ``"rope"``.
        norm_first: post-norm by default, as BERT.
        activation: ``"gelu"`` by default, as BERT.

    Shape:
        ``forward(tokens (B, L)) -> (B, L, V)``; ``classify(tokens (B, L)) -> (B, num_classes)``.

    Raises:
        ValueError: as :class:`DecoderOnlyTransformer`, or if ``pad_id`` is not in ``[0, vocab_size)`` or
            ``num_classes`` is not positive.
    """

    def __init__(
        self, vocab_size: int, d_model: int, num_heads: int, num_layers: int, d_ff: int, max_len: int,
        dropout: float = 0.0, *, num_classes: int | None = None, pad_id: int = 0,
        positional: _Positional = "learned", norm_first: bool = False, activation: str = "gelu",
        init: Literal["xavier", "torch"] = "xavier",
    ) -> None:
        super().__init__()
        _check_sizes(pad_id, vocab_size=vocab_size)
        if num_classes is not None:
            _check_sizes(num_classes=num_classes)
        self.pad_id = pad_id
        self.body = _TokenStack(vocab_size, d_model, num_heads, num_layers, d_ff, max_len, dropout,
                                positional, norm_first, activation)
        self.mlm_head = nn.Sequential(nn.Linear(d_model, d_model), nn.GELU(), nn.LayerNorm(d_model),
                                      nn.Linear(d_model, vocab_size))
        self.pooler = nn.Sequential(nn.Linear(d_model, d_model), nn.Tanh())
        self.classifier = None if num_classes is None else nn.Linear(d_model, num_classes)
        init_weights(self, init)

    def encode(self, tokens: Tensor, *, return_attention: bool = False) -> Tensor | tuple[Tensor, list[Tensor]]:
        """Contextual vectors ``(B, L, D)`` (and per-layer weights ``(B, H, L, L)``); padded keys are masked."""
        hidden, weights = self.body(tokens, causal=False, pad_id=self.pad_id)  # (B, L, D)
        return (hidden, weights) if return_attention else hidden

    def forward(self, tokens: Tensor) -> Tensor:
        """Masked-token logits: ``tokens (B, L) -> (B, L, V)``."""
        return self.mlm_head(self.encode(tokens))

    def classify(self, tokens: Tensor) -> Tensor:
        """Sequence-class logits from the pooled first token: ``tokens (B, L) -> (B, num_classes)``.

        Raises:
            ValueError: if the model was built with ``num_classes=None``.
        """
        if self.classifier is None:
            raise ValueError("num_classes: this model has no classification head (built with num_classes=None)")
        hidden = self.encode(tokens)  # (B, L, D)
        return self.classifier(self.pooler(hidden[:, 0]))  # (B, num_classes)
