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

import torch
from torch import Tensor, nn

from tformer._checks import check_int
from tformer.attention import KVCache
from tformer.masks import causal_mask
from tformer.models import CachedGenerationMixin, _check_tokens
from tformer.positional import RotaryEmbedding
from tformer.variants.efficient import GroupedQueryAttention
from tformer.variants.rmsnorm import RMSNorm
from tformer.variants.swiglu import SwiGLUFeedForward

__all__ = ["ModernDecoderLM", "ModernDecoderLayer", "modern_lm_parameter_count"]


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
    ) -> tuple[Tensor, Tensor]:
        """Pre-norm residual attention then pre-norm residual SwiGLU. Shape: ``(B, L, D) -> (B, L, D)``.

        ``mask`` is boolean, True = may attend, broadcastable to ``(B, H, L, S)``; ``cache`` and ``positions``
        are passed to the attention (RoPE positions default to ``len(cache) + arange(L)``).
        """
        h = self.attention_norm(x)  # (B, L, D)
        attended, weights = self.attention(h, h, h, mask, cache=cache, positions=positions)  # (B, L, D)
        x = x + attended  # (B, L, D)
        return x + self.ffn(self.ffn_norm(x)), weights  # (B, L, D), (B, H, L, S)


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
    for name, value in (("vocab_size", vocab_size), ("d_model", d_model), ("num_heads", num_heads),
                        ("num_kv_heads", num_kv_heads), ("num_layers", num_layers), ("d_ff", d_ff)):
        check_int(name, value, 1)
    if d_model % num_heads:
        raise ValueError(f"d_model: expected a multiple of num_heads ({num_heads}), got {d_model}")
    if num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads: expected a divisor of num_heads ({num_heads}), got {num_kv_heads}")
    kv_width = num_kv_heads * (d_model // num_heads)  # H_kv · Dh
    per_layer = 2 * d_model * d_model + 2 * d_model * kv_width + 3 * d_model * d_ff + 2 * d_model
    return 2 * vocab_size * d_model + num_layers * per_layer + d_model


class ModernDecoderLM(CachedGenerationMixin, nn.Module):
    """A decoder-only language model of :class:`ModernDecoderLayer` blocks (Llama-style, Touvron et al. 2023).

    Same interface as :class:`~tformer.models.DecoderOnlyTransformer` for training and evaluation:
    ``model(tokens)`` gives next-token logits, ``new_cache()`` and ``model(new_tokens, cache=cache)`` decode
    incrementally, and ``generate`` (from :class:`~tformer.models.CachedGenerationMixin`) extends a prompt
    through that cache. What it keeps from the book's model (√D embedding scale, Xavier init, untied output)
    is listed in the module docstring.

    Args:
        vocab_size: V.
        d_model, num_heads, num_kv_heads, num_layers, d_ff: D, H, H_kv, layers, F.
        max_len: longest sequence (cached + new) accepted; RoPE itself has no limit.
        rope_base: RoPE's base (10000 in Su et al. 2021 and Llama 1/2).
        norm_eps: eps of every RMSNorm.

    Shape:
        ``forward(tokens (B, L)) -> logits (B, L, V)``; position l sees tokens 0..l only. Tokens are int64 or
        int32; logits have the parameters' dtype (float32 unless converted).

    Raises:
        TypeError: if a size is not an int, or ``tokens`` not an integer tensor.
        ValueError: if a size is not positive, D is not divisible by H, H by H_kv, Dh is odd; in ``forward``,
            if ``tokens`` is not ``(B, L)`` with L ≥ 1, holds ids outside ``[0, V)``, or runs past ``max_len``.
    """

    def __init__(
        self, vocab_size: int, d_model: int, num_heads: int, num_kv_heads: int, num_layers: int, d_ff: int,
        max_len: int, *, rope_base: float = 10000.0, norm_eps: float = 1e-5,
    ) -> None:
        super().__init__()
        modern_lm_parameter_count(vocab_size, d_model, num_heads, num_kv_heads, num_layers, d_ff)  # checks sizes
        check_int("max_len", max_len, 1)
        if (d_model // num_heads) % 2:
            raise ValueError(f"d_model: expected D / num_heads = Dh even (RoPE rotates pairs), got Dh = "
                             f"{d_model // num_heads}")
        self.vocab_size, self.d_model, self.max_len = vocab_size, d_model, max_len
        # for CachedGenerationMixin.generate: no padding id; past max_len it crops the context to max_len
        self.pad_id: int | None = None
        self.generation_window: int | None = max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        self.rope = RotaryEmbedding(d_model // num_heads, base=rope_base, max_len=max_len)  # shared by all layers
        self.layers = nn.ModuleList(
            ModernDecoderLayer(d_model, num_heads, num_kv_heads, d_ff, rope=self.rope, norm_eps=norm_eps)
            for _ in range(num_layers)
        )
        self.final_norm = RMSNorm(d_model, eps=norm_eps)
        self.output = nn.Linear(d_model, vocab_size, bias=False)
        for p in self.parameters():  # the book's "xavier" scheme: every matrix; RMSNorm gains stay at 1
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

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
        if cache is not None and (not isinstance(cache, list) or len(cache) != len(self.layers)):
            got = len(cache) if isinstance(cache, list) else type(cache).__name__
            raise ValueError(f"cache: expected a list of {len(self.layers)} KVCache objects (new_cache()), got {got}")
        past = 0 if cache is None else len(cache[0])
        _check_tokens("tokens", tokens, self.vocab_size, self.max_len, offset=past)
        L = tokens.shape[1]
        mask = causal_mask(L, past + L, device=tokens.device) if L > 1 else None  # (L, S), True = may attend
        positions = torch.arange(past, past + L, device=tokens.device)  # (L,) for RoPE
        x = self.embed(tokens) * math.sqrt(self.d_model)  # (B, L, D)
        weights = []
        for i, layer in enumerate(self.layers):
            x, w = layer(x, mask, cache=None if cache is None else cache[i], positions=positions)  # (B, L, D)
            weights.append(w)
        logits = self.output(self.final_norm(x))  # (B, L, V)
        return (logits, weights) if return_attention else logits
