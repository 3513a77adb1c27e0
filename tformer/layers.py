"""The Transformer's building blocks: feed-forward network, encoder and decoder layers, and their stacks.

Introduced in ``09_transformer_block``. Each sublayer (attention or FFN) is wrapped in a residual connection and
layer normalisation, in one of two placements:

- post-norm (``norm_first=False``, the 2017 paper, §3.1): ``x = LayerNorm(x + Dropout(Sublayer(x)))``;
- pre-norm (``norm_first=True``, Xiong et al. 2020, "On Layer Normalization in the Transformer Architecture"):
  ``x = x + Dropout(Sublayer(LayerNorm(x)))``. The residual stream is then never normalised inside the stack, so
  pre-norm *stacks* end with one extra LayerNorm; post-norm stacks do not (their last layer already ends in one).

Both match ``torch.nn.TransformerEncoderLayer`` / ``TransformerDecoderLayer`` (``batch_first=True``) exactly;
``from_torch`` copies their weights. Layers return the attention weights they computed (never stored on
``self``) so chapters can draw heatmaps.

Dimension letters: B batch, L target length, S source length, D ``d_model``, H heads, F ``d_ff``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tformer._checks import (
    check_activation,
    check_bool,
    check_cache_count,
    check_choice,
    check_int,
    check_number,
    check_probability,
    check_type,
)
from tformer.attention import KVCache, MultiHeadAttention
from tformer.positional import RotaryEmbedding

__all__ = ["Decoder", "DecoderLayer", "Encoder", "EncoderLayer", "FeedForward"]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class FeedForward(nn.Module):
    """Position-wise feed-forward network FFN(x) = act(x W_1 + b_1) W_2 + b_2 (Vaswani et al. 2017, §3.3).

    Args:
        d_model: input and output width D.
        d_ff: hidden width F (the paper uses F = 4·D = 2048).
        dropout: dropout on the hidden activations (as torch's layers do), training mode only.
        activation: ``"relu"`` (the paper) or ``"gelu"``.
        bias: whether the two linear maps have biases.

    Shape:
        ``(B, L, D) -> (B, L, D)`` (any leading dimensions); every position is transformed independently by
        the same weights.

    Raises:
        TypeError: if a width is not an int or ``dropout`` not a number; in ``forward``, if ``x`` is not a
            floating-point tensor of the parameters' dtype.
        ValueError: on an unknown ``activation``, a non-positive width, ``dropout`` outside ``[0, 1)``; in
            ``forward``, if the last dimension of ``x`` is not D.
    """

    def __init__(
        self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu", *, bias: bool = True
    ) -> None:
        super().__init__()
        check_choice("activation", activation, sorted(_ACTIVATIONS))
        d_model = check_int("d_model", d_model, 1)
        d_ff = check_int("d_ff", d_ff, 1)
        dropout = check_probability("dropout", dropout)
        check_bool("bias", bias)
        self.d_model = d_model
        self.activation = activation
        self.w_1 = nn.Linear(d_model, d_ff, bias=bias)
        self.w_2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, *, checked: bool = False) -> Tensor:
        """Apply the two linear maps with the activation between. Shape: ``(..., D) -> (..., D)``.

        ``checked=True``: the owning module checked these inputs in this call (see :mod:`tformer._checks`).
        """
        if not checked:
            check_activation("x", x, "(..., D)", self.w_1.weight, D=self.d_model)  # positions are independent
        hidden = _ACTIVATIONS[self.activation](self.w_1(x))  # (B, L, F)
        return self.w_2(self.dropout(hidden))  # (B, L, D)


def _activation_name(layer: nn.TransformerEncoderLayer | nn.TransformerDecoderLayer) -> str:
    act = layer.activation
    if act is F.relu or isinstance(act, nn.ReLU):
        return "relu"
    if act is F.gelu or (isinstance(act, nn.GELU) and act.approximate == "none"):
        return "gelu"
    raise ValueError(f"layer: expected the activation relu or exact gelu (approximate='none'), got {act}")


def _check_stream(name: str, x: Tensor, layer: EncoderLayer | DecoderLayer) -> None:
    """Check a layer's input ``(B, L, D)`` up front, so a pre-norm layer's LayerNorm does not fail first."""
    check_activation(name, x, "(B, *, D)", layer.self_attn.w_q.weight, D=layer.self_attn.d_model)


def _check_torch_layer(layer: nn.TransformerEncoderLayer | nn.TransformerDecoderLayer, num_norms: int) -> None:
    """Reject torch layers whose settings our layer cannot express, rather than silently differing.

    Ours has one LayerNorm epsilon, affine LayerNorms with biases exactly when the FFN has them, and one dropout
    rate; torch lets each of these be changed per sublayer after construction.
    """
    norms = [getattr(layer, f"norm{i}") for i in range(1, num_norms + 1)]
    bias = layer.linear1.bias is not None
    for i, norm in enumerate(norms, start=1):
        if norm.weight is None or (norm.bias is not None) != bias:
            raise ValueError(
                f"layer: expected norm{i} an affine LayerNorm with bias={bias} (as linear1), "
                f"got elementwise_affine={norm.weight is not None}, bias={norm.bias is not None}"
            )
    if (layer.linear2.bias is not None) != bias:
        raise ValueError(f"layer: expected biases in both linear1 and linear2 or in neither, got linear1 bias={bias}")
    eps = {norm.eps for norm in norms}
    if len(eps) > 1:
        raise ValueError(f"layer: expected one eps shared by every LayerNorm, got {[norm.eps for norm in norms]}")
    rates = {layer.dropout.p} | {getattr(layer, f"dropout{i}").p for i in range(1, num_norms + 1)}
    if len(rates) > 1:
        raise ValueError(f"layer: expected one rate shared by every dropout, got {sorted(rates)}")


def _copy_weight_and_bias(dst: nn.Linear | nn.LayerNorm, src: nn.Linear | nn.LayerNorm) -> None:
    dst.weight.copy_(src.weight)
    if dst.bias is not None:
        dst.bias.copy_(src.bias)


def _from_torch_layer(
    cls: type[EncoderLayer] | type[DecoderLayer],
    layer: nn.TransformerEncoderLayer | nn.TransformerDecoderLayer,
    num_norms: int,
) -> EncoderLayer | DecoderLayer:
    """Build ``cls`` with ``layer``'s settings and copy its self-attention, FFN and LayerNorms.

    What the two layer kinds share; :meth:`DecoderLayer.from_torch` adds the cross-attention.
    """
    _check_torch_layer(layer, num_norms)
    self_attn = MultiHeadAttention.from_torch(layer.self_attn)
    ours = cls(
        self_attn.d_model, self_attn.num_heads, layer.linear1.out_features, layer.dropout.p, layer.norm_first,
        activation=_activation_name(layer), layer_norm_eps=layer.norm1.eps, bias=layer.linear1.bias is not None,
    ).to(device=layer.linear1.weight.device, dtype=layer.linear1.weight.dtype)  # fmt: skip
    ours.self_attn = self_attn
    with torch.no_grad():
        _copy_weight_and_bias(ours.ffn.w_1, layer.linear1)
        _copy_weight_and_bias(ours.ffn.w_2, layer.linear2)
        for i in range(1, num_norms + 1):
            _copy_weight_and_bias(getattr(ours, f"norm{i}"), getattr(layer, f"norm{i}"))
    return ours


def _check_norm_eps(layer_norm_eps: object) -> None:
    check_number("layer_norm_eps", layer_norm_eps, 0.0)


class EncoderLayer(nn.Module):
    """One encoder layer: self-attention then FFN, each with residual + LayerNorm (Vaswani et al. 2017, §3.1).

    With a causal mask (and, optionally, ``rope``) the same layer is a decoder-only (GPT-style) block.

    Args:
        d_model, num_heads, d_ff: widths D, H, F.
        dropout: one rate for attention weights, FFN hidden units and both residual branches (as torch).
        norm_first: ``False`` for the paper's post-norm, ``True`` for pre-norm (see module docstring).
        activation: FFN activation, ``"relu"`` or ``"gelu"``.
        layer_norm_eps: LayerNorm epsilon (torch's default 1e-5).
        bias: biases in the linear maps and LayerNorms.
        rope: optional rotary embedding for the self-attention.
        alibi: add ALiBi's distance penalty to the self-attention scores (see :class:`MultiHeadAttention`).

    Shape:
        ``forward(x (B, L, D), mask) -> (output (B, L, D), weights (B, H, L, S))``.

    Raises:
        ValueError: if ``d_model`` is not divisible by ``num_heads``, ``layer_norm_eps`` is negative, or another
            argument is invalid (TypeError for a wrong type).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        *,
        activation: str = "relu",
        layer_norm_eps: float = 1e-5,
        bias: bool = True,
        rope: RotaryEmbedding | None = None,
        alibi: bool = False,
    ) -> None:
        super().__init__()
        _check_norm_eps(layer_norm_eps)
        self.norm_first = check_bool("norm_first", norm_first)
        check_bool("bias", bias)
        self.self_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout, rope=rope, alibi=alibi)
        self.ffn = FeedForward(d_model, d_ff, dropout, activation, bias=bias)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        *,
        cache: KVCache | None = None,
        positions: Tensor | None = None,
        checked: bool = False,
    ) -> tuple[Tensor, Tensor]:
        """Apply the layer.

        Args:
            x: ``(B, L, D)``.
            mask: boolean self-attention mask, True = may attend (any shape ``MultiHeadAttention`` accepts).
            cache, positions: passed to the self-attention (incremental decoding, RoPE).

        Returns:
            ``(output (B, L, D), self-attention weights (B, H, L, S))``.

        Raises:
            TypeError / ValueError: if ``x`` is not a floating-point ``(B, L, D)`` tensor of the parameters'
                dtype; see :class:`MultiHeadAttention` for the mask.

        ``checked=True``: the owning module checked these inputs in this call (see :mod:`tformer._checks`).
        """
        if not checked:
            self.check_inputs(x, mask, cache=cache, positions=positions)
        if self.norm_first:
            h = self.norm1(x)
            attn, weights = self.self_attn(h, h, h, mask, cache=cache, positions=positions, checked=True)
            x = x + self.dropout1(attn)  # (B, L, D)
            x = x + self.dropout2(self.ffn(self.norm2(x), checked=True))  # (B, L, D)
        else:
            attn, weights = self.self_attn(x, x, x, mask, cache=cache, positions=positions, checked=True)
            x = self.norm1(x + self.dropout1(attn))  # (B, L, D)
            x = self.norm2(x + self.dropout2(self.ffn(x, checked=True)))  # (B, L, D)
        return x, weights

    def check_inputs(
                     self, x: Tensor, mask: Tensor | None = None, *, cache: KVCache | None = None, positions: Tensor | None = None) -> None:
        """The checks of :meth:`forward` (the stream, then the self-attention's), run once by the one who calls in."""
        _check_stream("x", x, self)
        self.self_attn.check_inputs(x, x, x, mask, cache=cache, positions=positions)

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> EncoderLayer:
        """Build an equivalent layer from ``torch.nn.TransformerEncoderLayer`` (relu/gelu, either norm_first).

        Raises:
            TypeError: if ``layer`` is not an ``nn.TransformerEncoderLayer``.
            ValueError: if its activation is neither relu nor exact gelu, its LayerNorms differ in eps or are not
                affine, its dropout rates differ, or its biases are mixed (settings ours cannot express).
        """
        check_type("layer", layer, nn.TransformerEncoderLayer, "nn.TransformerEncoderLayer")
        return _from_torch_layer(cls, layer, num_norms=2).train(layer.training)


class DecoderLayer(nn.Module):
    """One decoder layer: masked self-attention, cross-attention to the encoder memory, FFN (§3.1).

    Each of the three sublayers has residual + LayerNorm, placed as in :class:`EncoderLayer`. Same arguments as
    :class:`EncoderLayer`; ``rope`` (or ``alibi``) acts on the masked self-attention only. Cross-attention never
    gets it: its
    queries and keys are positions of two different sequences, so their offset m − n means nothing.

    Shape:
        ``forward(x (B, L, D), memory (B, S, D), self_mask, memory_mask) -> (output (B, L, D),
        self weights (B, H, L, L), cross weights (B, H, L, S))``.

    Raises:
        ValueError / TypeError: as :class:`EncoderLayer`.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        *,
        activation: str = "relu",
        layer_norm_eps: float = 1e-5,
        bias: bool = True,
        rope: RotaryEmbedding | None = None,
        alibi: bool = False,
    ) -> None:
        super().__init__()
        _check_norm_eps(layer_norm_eps)
        self.norm_first = check_bool("norm_first", norm_first)
        check_bool("bias", bias)
        self.self_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout, rope=rope, alibi=alibi)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout, activation, bias=bias)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        *,
        cache: tuple[KVCache, KVCache] | None = None,
        checked: bool = False,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Apply the layer.

        Args:
            x: decoder stream ``(B, L, D)``.
            memory: encoder output ``(B, S, D)``.
            self_mask: boolean mask for self-attention (usually causal), True = may attend, ``(L, L)``-like.
            memory_mask: boolean mask for cross-attention (usually source padding ``(B, 1, 1, S)``).
            cache: optional ``(self-attention cache, cross-attention cache)``; the second should be
                ``KVCache(static=True)`` so the memory is projected only once.

        Returns:
            ``(output (B, L, D), self-attention weights (B, H, L, L), cross-attention weights (B, H, L, S))``.

        Raises:
            TypeError / ValueError: if ``x`` or ``memory`` is not a floating-point ``(B, *, D)`` tensor of the
                parameters' dtype; see :class:`MultiHeadAttention` for the masks.

        ``checked=True``: the owning module checked these inputs in this call (see :mod:`tformer._checks`).
        """
        if not checked:
            self.check_inputs(x, memory, self_mask, memory_mask, cache=cache)
        self_cache, cross_cache = (None, None) if cache is None else cache
        if self.norm_first:
            h = self.norm1(x)
            attn, self_weights = self.self_attn(h, h, h, self_mask, cache=self_cache, checked=True)
            x = x + self.dropout1(attn)  # (B, L, D)
            h = self.norm2(x)
            attn, cross_weights = self.cross_attn(h, memory, memory, memory_mask, cache=cross_cache, checked=True)
            x = x + self.dropout2(attn)  # (B, L, D)
            x = x + self.dropout3(self.ffn(self.norm3(x), checked=True))  # (B, L, D)
        else:
            attn, self_weights = self.self_attn(x, x, x, self_mask, cache=self_cache, checked=True)
            x = self.norm1(x + self.dropout1(attn))  # (B, L, D)
            attn, cross_weights = self.cross_attn(x, memory, memory, memory_mask, cache=cross_cache, checked=True)
            x = self.norm2(x + self.dropout2(attn))  # (B, L, D)
            x = self.norm3(x + self.dropout3(self.ffn(x, checked=True)))  # (B, L, D)
        return x, self_weights, cross_weights

    def check_inputs(self, x: Tensor, memory: Tensor, self_mask: Tensor | None = None,
                     memory_mask: Tensor | None = None, *, cache: tuple[KVCache, KVCache] | None = None) -> None:
        """The checks of :meth:`forward` (stream, memory, both attentions'), run once by the one who calls in."""
        _check_stream("x", x, self)
        check_activation("memory", memory, "(B, S, D)", self.self_attn.w_q.weight, B=x.shape[0], D=self.self_attn.d_model)
        self_cache, cross_cache = (None, None) if cache is None else cache
        self.self_attn.check_inputs(x, x, x, self_mask, cache=self_cache)
        self.cross_attn.check_inputs(x, memory, memory, memory_mask, cache=cross_cache)

    @classmethod
    def from_torch(cls, layer: nn.TransformerDecoderLayer) -> DecoderLayer:
        """Build an equivalent layer from ``torch.nn.TransformerDecoderLayer`` (relu/gelu, either norm_first).

        Raises:
            TypeError: if ``layer`` is not an ``nn.TransformerDecoderLayer``.
            ValueError: as :meth:`EncoderLayer.from_torch`.
        """
        check_type("layer", layer, nn.TransformerDecoderLayer, "nn.TransformerDecoderLayer")
        ours = _from_torch_layer(cls, layer, num_norms=3)
        ours.cross_attn = MultiHeadAttention.from_torch(layer.multihead_attn)
        return ours.train(layer.training)


def _final_norm(
    d_model: int, eps: float, bias: bool, norm_first: bool, final_norm: bool | None
) -> nn.LayerNorm | None:
    """A stack's closing LayerNorm (biased exactly when its layers are), or ``None`` (see :class:`Encoder`)."""
    if not isinstance(final_norm, bool) and final_norm is not None:
        raise TypeError(f"final_norm: expected a bool or None, got {type(final_norm).__name__}")
    wanted = norm_first if final_norm is None else final_norm
    return nn.LayerNorm(d_model, eps=eps, bias=bias) if wanted else None


class Encoder(nn.Module):
    """A stack of ``num_layers`` :class:`EncoderLayer`; pre-norm stacks end with a LayerNorm, post-norm do not.

    The 2017 paper is post-norm: each layer already ends with a LayerNorm. Pre-norm (Xiong et al. 2020) leaves
    the residual stream un-normalised, so one final LayerNorm is added. ``final_norm``: ``None`` (default) adds
    it exactly when ``norm_first``; ``True``/``False`` force it. The attribute ``final_norm`` holds the
    LayerNorm (with a bias exactly when the layers have biases) or ``None``. Other arguments as
    :class:`EncoderLayer`. Vaswani et al. 2017, §3.1 (N = 6 identical layers).

    Shape:
        ``forward(x (B, L, D), mask) -> (output (B, L, D), [weights (B, H, L, S)] * num_layers)``.

    Raises:
        ValueError / TypeError: if ``num_layers`` is not a positive int, or as :class:`EncoderLayer`.
    """

    def __init__(
        self,
        num_layers: int,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        *,
        activation: str = "relu",
        layer_norm_eps: float = 1e-5,
        bias: bool = True,
        final_norm: bool | None = None,
        rope: RotaryEmbedding | None = None,
        alibi: bool = False,
    ) -> None:
        super().__init__()
        num_layers = check_int("num_layers", num_layers, 1)
        check_bool("norm_first", norm_first)
        check_bool("bias", bias)
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first, activation=activation,
                         layer_norm_eps=layer_norm_eps, bias=bias, rope=rope, alibi=alibi)
            for _ in range(num_layers)
        )
        self.final_norm = _final_norm(d_model, layer_norm_eps, bias, norm_first, final_norm)

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        *,
        cache: list[KVCache] | None = None,
        positions: Tensor | None = None,
        checked: bool = False,
    ) -> tuple[Tensor, list[Tensor]]:
        """Apply every layer in turn; ``cache`` (one :class:`KVCache` per layer) enables incremental decoding.

        Raises:
            TypeError / ValueError: as :class:`EncoderLayer`; TypeError / ValueError if ``cache`` is not a list of one
                :class:`KVCache` per layer; ValueError if a filled cache holds another batch, number or width of
                heads, or (outside autocast) keys of another dtype than the parameters'.

        ``checked=True``: the owning module checked these inputs in this call (see :mod:`tformer._checks`).
        """
        if not checked:
            attn = self.layers[0].self_attn
            batch = x.shape[0] if isinstance(x, Tensor) and x.dim() == 3 else None  # else check_inputs says
            check_cache_count(cache, len(self.layers), "one KVCache per layer", heads=(attn.num_heads, attn.head_dim),
                              batch=batch, weight=attn.w_q.weight)
            self.layers[0].check_inputs(x, mask, cache=None if cache is None else cache[0], positions=positions)
        all_weights = []
        for i, layer in enumerate(self.layers):
            x, weights = layer(x, mask, cache=None if cache is None else cache[i], positions=positions, checked=True)
            all_weights.append(weights)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x, all_weights


class Decoder(nn.Module):
    """A stack of ``num_layers`` :class:`DecoderLayer`; pre-norm stacks end with a LayerNorm (see :class:`Encoder`).

    ``final_norm`` and ``bias`` as :class:`Encoder`; ``rope`` and ``alibi`` reach the self-attention only (see
    :class:`DecoderLayer`).

    Shape:
        ``forward(x (B, L, D), memory (B, S, D), self_mask, memory_mask) -> (output (B, L, D),
        [self weights (B, H, L, L)] * num_layers, [cross weights (B, H, L, S)] * num_layers)``.

    Raises:
        ValueError / TypeError: if ``num_layers`` is not a positive int, or as :class:`DecoderLayer`.
    """

    def __init__(
        self,
        num_layers: int,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        *,
        activation: str = "relu",
        layer_norm_eps: float = 1e-5,
        bias: bool = True,
        final_norm: bool | None = None,
        rope: RotaryEmbedding | None = None,
        alibi: bool = False,
    ) -> None:
        super().__init__()
        num_layers = check_int("num_layers", num_layers, 1)
        check_bool("norm_first", norm_first)
        check_bool("bias", bias)
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, num_heads, d_ff, dropout, norm_first, activation=activation,
                         layer_norm_eps=layer_norm_eps, bias=bias, rope=rope, alibi=alibi)
            for _ in range(num_layers)
        )
        self.final_norm = _final_norm(d_model, layer_norm_eps, bias, norm_first, final_norm)

    def new_cache(self) -> list[tuple[KVCache, KVCache]]:
        """Empty caches for incremental decoding: per layer, (growing self-attention, static cross-attention)."""
        return [(KVCache(), KVCache(static=True)) for _ in self.layers]

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        *,
        cache: list[tuple[KVCache, KVCache]] | None = None,
        checked: bool = False,
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        """Apply every layer in turn; ``cache`` comes from :meth:`new_cache`.

        Raises:
            TypeError / ValueError: as :class:`DecoderLayer`; TypeError / ValueError if ``cache`` is not a list of one
                ``(self, cross)`` pair of caches per layer; ValueError if a filled cache holds another batch, memory
                length, number or width of heads, or (outside autocast) keys of another dtype than the parameters'.

        ``checked=True``: the owning module checked these inputs in this call (see :mod:`tformer._checks`).
        """
        if not checked:
            attn = self.layers[0].self_attn
            shaped = isinstance(x, Tensor) and x.dim() == 3 and isinstance(memory, Tensor) and memory.dim() == 3
            check_cache_count(cache, len(self.layers), "one (self, cross) KVCache pair per layer (see new_cache)",
                              kinds=(False, True), heads=(attn.num_heads, attn.head_dim),
                              batch=x.shape[0] if shaped else None, memory_length=memory.shape[1] if shaped else None,
                              weight=attn.w_q.weight)
            self.layers[0].check_inputs(x, memory, self_mask, memory_mask, cache=None if cache is None else cache[0])
        self_weights, cross_weights = [], []
        for i, layer in enumerate(self.layers):
            x, sw, cw = layer(x, memory, self_mask, memory_mask, cache=None if cache is None else cache[i], checked=True)
            self_weights.append(sw)
            cross_weights.append(cw)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x, self_weights, cross_weights

