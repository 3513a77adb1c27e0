"""A 2024-style decoder block and a small language model built from it (``14_new_problems``, the block race).

The block of Llama (Touvron et al. 2023a, "LLaMA", §2.2 "Architecture") with the grouped-query attention that
Llama 2 adds to its 34B and 70B models (Touvron et al. 2023b, §2.2) and Llama 3 to every size, put together from
the package's pieces:

- **pre-normalisation with RMSNorm** (:class:`~tformer.variants.rmsnorm.RMSNorm`, Zhang & Sennrich 2019): each
  sublayer reads a normalised copy of the residual stream and adds its output back, ``x + f(RMSNorm(x))``;
- **SwiGLU feed-forward** (:class:`~tformer.variants.swiglu.SwiGLUFeedForward`, Shazeer 2020);
- **rotary positions** (:class:`~tformer.positional.RotaryEmbedding`, Su et al. 2021) on queries and keys, no
  position vectors added to the embeddings;
- **grouped-query attention** (:class:`~tformer.variants.efficient.GroupedQueryAttention`, Ainslie et al. 2023):
  H query heads share H_kv key/value heads, so the KV cache holds H_kv heads;
- **no biases** anywhere (attention, FFN, output layer), as in Llama's reference code.

Outside the block :class:`ModernDecoderLM` keeps what the book's :class:`~tformer.models.DecoderOnlyTransformer`
does, so that a race between the two compares blocks: token embeddings multiplied by √D (Vaswani et al. 2017,
§3.4; Llama does not scale them), a final norm (here RMSNorm) before an untied output layer, every matrix
initialised Xavier-uniform (as :func:`tformer.models.init_weights` does; Hugging Face's Llama draws N(0, 0.02)
instead).

Dimension letters: B batch, L query length (new tokens), S key length (cached + new), D ``d_model``, H query
heads, H_kv key/value heads, Dh = D / H, F the SwiGLU width ``d_ff``, V vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any, ClassVar, Literal

import torch
from torch import Tensor, nn

from tformer._checks import (
    check_cache_count,
    check_flags,
    check_int,
    check_number,
    check_tokens,
    is_int,
    is_number,
    type_name,
)
from tformer.attention import KVCache
from tformer.decoding import CachedGenerationMixin
from tformer.masks import causal_mask
from tformer.models import ModelConfig, Positional, as_config
from tformer.positional import RotaryEmbedding
from tformer.variants.efficient import GroupedQueryAttention
from tformer.variants.rmsnorm import RMSNorm
from tformer.variants.swiglu import SwiGLUFeedForward

__all__ = ["ModernDecoderConfig", "ModernDecoderLM", "ModernDecoderLayer", "modern_lm_parameter_count"]


class ModernDecoderLayer(nn.Module):
    """One Llama-style decoder layer: ``h = x + Attn(RMSNorm(x))``, ``out = h + SwiGLU(RMSNorm(h))``.

    Touvron et al. 2023a, §2.2 (pre-normalisation with RMSNorm, SwiGLU, rotary embeddings) and 2023b, §2.2
    (grouped-query attention). No biases, no dropout. Every tensor has the parameters' floating dtype.

    Args:
        d_model: width D, divisible by ``num_heads``.
        num_heads: query heads H (Dh = D / H, even for RoPE).
        num_kv_heads: key/value heads H_kv, dividing H.
        d_ff: SwiGLU hidden width F (:func:`~tformer.variants.swiglu.swiglu_hidden_width` gives the 2017 FFN's
            parameter count; any positive width is accepted).
        rope: the :class:`~tformer.positional.RotaryEmbedding` (width Dh) the attention applies; a stack shares
            one.
        norm_eps: RMSNorm's eps (Llama 2 uses 1e-5).

    Parameters: 2·D² + 2·D·H_kv·Dh (attention) + 3·D·F (SwiGLU) + 2·D (two RMSNorm gains).

    Shape:
        ``forward(x (B, L, D), mask, *, cache, positions) -> (output (B, L, D), weights (B, H, L, S))``.

    Raises:
        TypeError / ValueError: as :class:`~tformer.variants.efficient.GroupedQueryAttention`,
            :class:`~tformer.variants.swiglu.SwiGLUFeedForward` and :class:`~tformer.variants.rmsnorm.RMSNorm`.
    """

    def __init__(
        self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int, *, rope: RotaryEmbedding,
        norm_eps: float = 1e-5,
    ) -> None:
        super().__init__()
        self.attention_norm = RMSNorm(d_model, eps=norm_eps)
        self.attention = GroupedQueryAttention(d_model, num_heads, num_kv_heads, bias=False, rope=rope)
        self.ffn_norm = RMSNorm(d_model, eps=norm_eps)
        self.ffn = SwiGLUFeedForward(d_model, d_ff, bias=False)

    def forward(
        self, x: Tensor, mask: Tensor | None = None, *, cache: KVCache | None = None,
        positions: Tensor | None = None,
        checked: bool = False,
    ) -> tuple[Tensor, Tensor]:
        """Pre-norm residual attention then pre-norm residual SwiGLU. Shape: ``(B, L, D) -> (B, L, D)``.

        ``mask`` is boolean, True = may attend, broadcastable to ``(B, H, L, S)``; ``cache`` and ``positions``
        are passed to the attention (RoPE positions default to ``len(cache) + arange(L)``).

        ``checked=True``: the owning module checked these inputs in this call (see :mod:`tformer._checks`).
        """
        if not checked:
            self.attention.check_inputs(x, x, x, mask, cache=cache, positions=positions)
        h = self.attention_norm(x, checked=True)  # (B, L, D)
        attended, weights = self.attention(h, h, h, mask, cache=cache, positions=positions, checked=True)  # (B, L, D)
        x = x + attended  # (B, L, D)
        return x + self.ffn(self.ffn_norm(x, checked=True), checked=True), weights  # (B, L, D), (B, H, L, S)


def modern_lm_parameter_count(
    vocab_size: int, d_model: int, num_heads: int, num_kv_heads: int, num_layers: int, d_ff: int
) -> int:
    """Parameters of :class:`ModernDecoderLM`, by formula (no positions to count: RoPE has no weights).

    V·D (embedding) + layers · (2·D² + 2·D·H_kv·Dh + 3·D·F + 2·D) + D (final RMSNorm) + D·V (output, no
    bias).

    Shape:
        none: ints in, an int out.

    Raises:
        TypeError: if a size is not an int.
        ValueError: if a size is below 1, H does not divide D, or H_kv does not divide H.
    """
    vocab_size, d_model, num_heads, num_kv_heads, num_layers, d_ff = (  # Python ints: NumPy ones could overflow
        check_int(name, value, 1) for name, value in (("vocab_size", vocab_size), ("d_model", d_model),
        ("num_heads", num_heads), ("num_kv_heads", num_kv_heads), ("num_layers", num_layers), ("d_ff", d_ff)))
    if d_model % num_heads:
        raise ValueError(f"d_model: expected a multiple of num_heads ({num_heads}), got {d_model}")
    if num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads: expected a divisor of num_heads ({num_heads}), got {num_kv_heads}")
    kv_width = num_kv_heads * (d_model // num_heads)  # H_kv · Dh
    per_layer = 2 * d_model * d_model + 2 * d_model * kv_width + 3 * d_model * d_ff + 2 * d_model
    return 2 * vocab_size * d_model + num_layers * per_layer + d_model


@dataclass(frozen=True)
class ModernDecoderConfig(ModelConfig):
    """Settings of :class:`ModernDecoderLM`: :class:`~tformer.models.ModelConfig`'s shared fields and defaults
    (D = 512, H = 8, F = 2048, ``max_len`` 512), plus what the 2024 block adds.

    The shared fields that describe the block are fixed to what it is, and any other value is refused rather
    than ignored: ``positional="rope"``, ``norm_first=True`` (pre-RMSNorm, so a final norm), ``activation=
    "swiglu"``, ``bias=False``, ``dropout=0.0`` (Llama trains without), ``pad_id=None`` (no padding id; the
    character models of chapter 14 have none), ``tie_embeddings=False``, ``init="xavier"``.

    Attributes:
        vocab_size: V (the positional argument).
        num_layers: blocks in the stack (default 6).
        num_kv_heads: H_kv, the key/value heads of grouped-query attention, a divisor of H; ``None`` (default)
            means H_kv = H (multi-head attention).
        rope_base: RoPE's base (10000 in Su et al. 2021 and Llama 1/2).
        norm_eps: eps of every RMSNorm (Llama 2: 1e-5).
        max_len: unlike the 2017 models with RoPE, :class:`ModernDecoderLM` refuses inputs longer than
            ``max_len`` and ``generate`` crops its context to the last ``max_len`` tokens, so
            ``position_limit`` is ``max_len`` here (Llama's ``max_seq_len``).

    Raises:
        TypeError / ValueError: a size that is not a positive int (first the ones
            :func:`modern_lm_parameter_count` checks, in its words), D not a multiple of H, H not a multiple of
            H_kv, an odd Dh, ``rope_base`` or ``norm_eps`` not a finite number > 0.
        TypeError: a fixed field given a value of another type than the field's (``dropout="0"`` or ``False``
            where a number belongs, ``norm_first=1`` or ``"yes"`` where a bool belongs).
        ValueError: a fixed field given another value of its type (``dropout=0.1``, ``norm_first=False``); any
            real zero is the fixed dropout, stored as ``0.0``.
    """

    vocab_size: int
    _: KW_ONLY
    num_layers: int = 6
    num_kv_heads: int | None = None
    rope_base: float = 10000.0
    norm_eps: float = 1e-5
    dropout: float = 0.0
    pad_id: int | None = None
    positional: Positional = "rope"
    norm_first: bool = True
    activation: Literal["swiglu"] = "swiglu"  # type: ignore[assignment]
    bias: bool = False

    causal: ClassVar[bool] = True
    activations: ClassVar[tuple[str, ...]] = ("swiglu",)
    FIXED: ClassVar[dict[str, Any]] = {"positional": "rope", "norm_first": True, "activation": "swiglu", "bias": False,
                                       "dropout": 0.0, "pad_id": None, "tie_embeddings": False, "init": "xavier",
                                       "final_norm": None}  # fmt: skip
    # whether a value has the fixed field's type (ModelConfig's): another type is a TypeError, another value a
    # ValueError
    FIXED_TYPES: ClassVar[dict[str, Callable[[object], bool]]] = {
        "positional": lambda v: isinstance(v, str), "norm_first": lambda v: isinstance(v, bool),
        "activation": lambda v: isinstance(v, str), "bias": lambda v: isinstance(v, bool),
        "dropout": is_number, "pad_id": lambda v: v is None or is_int(v),
        "tie_embeddings": lambda v: isinstance(v, bool), "init": lambda v: isinstance(v, str),
        "final_norm": lambda v: v is None or isinstance(v, bool),
    }

    def _sizes(self) -> dict[str, int]:
        return {"vocab_size": self.vocab_size, "num_layers": self.num_layers, "num_kv_heads": self.kv_heads}

    def __post_init__(self) -> None:
        if self.num_kv_heads is not None:
            check_int("num_kv_heads", self.num_kv_heads, 1)
        modern_lm_parameter_count(self.vocab_size, self.d_model, self.num_heads, self.kv_heads, self.num_layers,
                                  self.d_ff)  # checks the sizes, in the words the 2024 block always used
        check_int("max_len", self.max_len, 1)
        if isinstance(self.d_model, int) and (self.d_model // self.num_heads) % 2:
            raise ValueError(f"d_model: expected D / num_heads = Dh even (RoPE rotates pairs), got Dh = "
                             f"{self.d_model // self.num_heads}")
        for name, wanted in self.FIXED.items():
            got = getattr(self, name)
            if not self.FIXED_TYPES[name](got):  # the type first: "0" or False is no dropout, 1 no norm_first
                raise TypeError(f"{name}: expected {wanted!r} (fixed by the 2024 block), "
                                f"got {type_name(got)} {got!r:.60}")  # fmt: skip
            if got != wanted:
                raise ValueError(f"{name}: expected {wanted!r} (fixed by the 2024 block), got {got!r}")
            if isinstance(wanted, float):  # dropout=0 or np.float32(0) means 0.0
                object.__setattr__(self, name, wanted)  # frozen: stored as the float it stands for
        super().__post_init__()
        check_number("rope_base", self.rope_base, 0.0, open_min=True, finite=True)  # ∞: only one pair would turn
        check_number("norm_eps", self.norm_eps, 0.0, open_min=True, finite=True)  # RMSNorm divides by √(mean + eps)

    @property
    def kv_heads(self) -> int:
        """H_kv: ``num_kv_heads``, or H when it is ``None``."""
        return self.num_heads if self.num_kv_heads is None else self.num_kv_heads

    @property
    def position_limit(self) -> int | None:
        """``max_len``: the model refuses longer inputs and ``generate`` crops to it (see the class docstring)."""
        return self.max_len


_OLD_POSITIONAL = ("vocab_size", "d_model", "num_heads", "num_kv_heads", "num_layers", "d_ff", "max_len")


class ModernDecoderLM(CachedGenerationMixin, nn.Module):
    """A decoder-only language model of :class:`ModernDecoderLayer` blocks (Llama-style, Touvron et al. 2023).

    Same interface as :class:`~tformer.models.DecoderOnlyTransformer` for training and evaluation:
    ``model(tokens)`` gives next-token logits, ``new_cache()`` and ``model(new_tokens, cache=cache)`` decode
    incrementally, and ``generate`` (from :class:`~tformer.models.CachedGenerationMixin`) extends a prompt
    through that cache. What it keeps from the book's model (√D embedding scale, Xavier init, untied output)
    is listed in the module docstring.

    Build it from a :class:`ModernDecoderConfig` (``ModernDecoderLM(config)``, or ``ModernDecoderLM(config,
    num_layers=4)`` for a changed copy), from the config's fields as keywords (``ModernDecoderLM(V,
    d_model=64, num_kv_heads=2)``), or, as before the config existed, from seven sizes in this order:
    ``ModernDecoderLM(V, D, H, H_kv, layers, F, max_len, *, rope_base=..., norm_eps=...)``. ``model.config`` is
    the config.

    Args (the config's fields):
        vocab_size: V.
        d_model, num_heads, num_kv_heads, num_layers, d_ff: D, H, H_kv, layers, F.
        max_len: longest sequence (cached + new) accepted; RoPE itself has no limit.
        rope_base: RoPE's base (10000 in Su et al. 2021 and Llama 1/2).
        norm_eps: eps of every RMSNorm.

    Shape:
        ``forward(tokens (B, L)) -> logits (B, L, V)``; position l sees tokens 0..l only. Tokens are int64 or
        int32; logits have the parameters' dtype (float32 unless converted).

    Raises:
        TypeError: if a size is not an int, ``tokens`` not an integer tensor, or ``cache`` not a list.
        ValueError: if a size is not positive, D is not divisible by H, H by H_kv, Dh is odd; in ``forward``,
            if ``tokens`` is not ``(B, L)`` with L ≥ 1, holds ids outside ``[0, V)``, or runs past ``max_len``,
            or a ``cache`` of another length or filled by another model (another batch, H_kv or Dh, or, outside
            autocast, keys of another dtype than the parameters').
    """

    def __init__(self, *args: Any, **settings: Any) -> None:
        super().__init__()
        if len(args) > 1 and not isinstance(args[0], ModelConfig):  # the seven sizes, by position
            settings = {**dict(zip(_OLD_POSITIONAL[1:], args[1:], strict=False)), **settings}
            args = args[:1]
        self.config: ModernDecoderConfig = as_config(ModernDecoderConfig, args, settings)
        config = self.config
        D, H = config.d_model, config.num_heads
        self.embed = nn.Embedding(config.vocab_size, D)
        self.rope = RotaryEmbedding(D // H, base=config.rope_base, max_len=config.max_len)  # shared by all layers
        self.layers = nn.ModuleList(
            ModernDecoderLayer(D, H, config.kv_heads, config.d_ff, rope=self.rope, norm_eps=config.norm_eps)
            for _ in range(config.num_layers)
        )
        self.final_norm = RMSNorm(D, eps=config.norm_eps)
        self.output = nn.Linear(D, config.vocab_size, bias=False)
        for p in self.parameters():  # the book's "xavier" scheme: every matrix; RMSNorm gains stay at 1
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    @property
    def vocab_size(self) -> int:
        """V (``config.vocab_size``)."""
        return self.config.vocab_size

    @property
    def d_model(self) -> int:
        """D (``config.d_model``)."""
        return self.config.d_model

    @property
    def max_len(self) -> int:
        """The longest input (cached + new tokens) accepted (``config.max_len``)."""
        return self.config.max_len

    @property
    def pad_id(self) -> int | None:
        """``None``: no padding id, every id is a token that ``generate`` may produce."""
        return self.config.pad_id

    @property
    def position_limit(self) -> int | None:
        """``max_len``: ``generate`` crops its context to it (``config.position_limit``)."""
        return self.config.position_limit

    def new_cache(self) -> list[KVCache]:
        """Empty key/value caches, one per layer; each will hold ``(B, H_kv, S, Dh)`` keys and values."""
        return [KVCache() for _ in self.layers]

    def forward(
        self, tokens: Tensor, *, cache: list[KVCache] | None = None, return_attention: bool = False
    ) -> Tensor | tuple[Tensor, list[Tensor]]:
        """Next-token logits for every position.

        Args:
            tokens: ``(B, L)`` int64/int32 ids; with a ``cache``, only the new tokens.
            cache: from :meth:`new_cache`, extended in place (positions continue after what it holds).
            return_attention: also return each layer's weights ``(B, H, L, S)``.

        Returns:
            logits ``(B, L, V)`` (and the list of weights).

        Raises:
            TypeError / ValueError: see the class docstring.
        """
        check_flags(return_attention=return_attention)
        if cache is not None:
            wanted = f"a list of {len(self.layers)} KVCache objects (new_cache())"
            if not isinstance(cache, list):  # a tuple too, as the 2017 models: new_cache() gives a list
                raise TypeError(f"cache: expected {wanted}, got {type(cache).__name__}")
            if len(cache) != len(self.layers):
                raise ValueError(f"cache: expected {wanted}, got {len(cache)}")
            batch = tokens.shape[0] if isinstance(tokens, Tensor) and tokens.dim() == 2 else None  # else check_tokens
            heads = (self.config.kv_heads, self.config.d_model // self.config.num_heads)  # (H_kv, Dh)
            check_cache_count(cache, len(self.layers), "one KVCache per layer (new_cache())", batch=batch, heads=heads,
                              weight=self.output.weight)
        past = 0 if cache is None else len(cache[0])
        check_tokens("tokens", tokens, self.vocab_size, self.position_limit, offset=past)
        L = tokens.shape[1]
        mask = causal_mask(L, past + L, device=tokens.device) if L > 1 else None  # (L, S), True = may attend
        positions = torch.arange(past, past + L, device=tokens.device)  # (L,) for RoPE
        x = self.embed(tokens) * math.sqrt(self.d_model)  # (B, L, D)
        weights = []
        for i, layer in enumerate(self.layers):
            x, w = layer(x, mask, cache=None if cache is None else cache[i], positions=positions, checked=True)  # (B, L, D)
            weights.append(w)
        logits = self.output(self.final_norm(x, checked=True))  # (B, L, V)
        return (logits, weights) if return_attention else logits
