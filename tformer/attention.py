"""Multi-head attention as a module, and the key/value cache for incremental decoding.

Introduced in ``07_multi_head_attention`` (the module) and ``10_encoder_decoder`` (the cache). The attention
maths itself lives in one place, :func:`tformer.functional.scaled_dot_product_attention` (its unchecked body
:func:`~tformer.functional.attend`); this module only projects, splits heads, calls it, merges heads and
projects back (Vaswani et al. 2017, §3.2.2):

    MultiHead(Q, K, V) = Concat(head_1, …, head_H) W^O,   head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

The H per-head projections W_i^Q (D × Dh) are stored side by side as one ``Linear(D, D)`` (``w_q``), so every
head is computed by the same matrix multiply — no Python loop over heads.

Dimension letters: B batch, L query length, S key length, D ``d_model``, H heads, Dh = D / H.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from tformer._checks import (
    check_bool,
    check_cache_dtype,
    check_divisible,
    check_flags,
    check_int,
    check_probability,
    check_query_key_value,
    check_self_attention,
    check_tensor,
    check_type,
)
from tformer.functional import attend
from tformer.masks import as_heads_mask, attention_mask_for_heads
from tformer.positional import RotaryEmbedding, alibi_bias

__all__ = ["KVCache", "MultiHeadAttention", "merge_heads", "split_heads"]


class KVCache:
    """The projected keys and values one attention module has seen so far, for incremental decoding.

    During generation a decoder produces one token at a time. Its self-attention at step t needs the keys and
    values of every earlier position; those never change, so instead of recomputing them we keep them here and
    project only the new position. Pass one ``KVCache`` per attention module, via ``MultiHeadAttention(...,
    cache=...)``; the module appends to it. Two kinds:

    - ``KVCache()`` (growing, for self-attention): each call appends the new keys/values along the S axis.
    - ``KVCache(static=True)`` (for cross-attention): the first call projects the encoder memory and stores it;
      later calls reuse it and ignore their ``key``/``value`` arguments, since the memory does not change.

    Shape:
        ``key``, ``value``: ``(B, H, S, Dh)`` once filled, ``None`` before.

    Raises:
        ValueError: in :meth:`update`, if new keys/values do not match the cached ``(B, H, ·, Dh)`` or each other.

    Source: the standard inference optimisation of autoregressive Transformers (e.g. Pope et al. 2022,
    "Efficiently Scaling Transformer Inference", §2).
    """

    def __init__(self, *, static: bool = False) -> None:
        check_flags(static=static)
        self.static = static
        self.key: Tensor | None = None
        self.value: Tensor | None = None

    def __len__(self) -> int:
        """Number of cached positions S (0 when empty)."""
        return 0 if self.key is None else self.key.shape[-2]

    def update(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Store new keys/values (appending, or setting once when static) and return everything cached.

        Shape:
            key, value: ``(B, H, S_new, Dh)``; returns two ``(B, H, S_past + S_new, Dh)`` tensors.

        Raises:
            ValueError: if they are not 4-D, differ in B, H or S_new, or (when appending) in B, H or Dh from
                the cache.
        """
        appending = self.key is not None and self.value is not None and not self.static

        def _fits(new: Tensor, old: Tensor | None) -> bool:  # same (B, H, ·, Dh) as what is cached
            return old is None or not appending or (new.shape[:2] == old.shape[:2] and new.shape[3:] == old.shape[3:])

        if key.dim() != 4 or value.dim() != 4 or key.shape[:3] != value.shape[:3] or not (
            _fits(key, self.key) and _fits(value, self.value)
        ):
            cached = "" if self.key is None else f", matching the cached {tuple(self.key.shape)} in B, H and Dh"
            raise ValueError(
                f"key, value: expected (B, H, S_new, Dh) each{cached}, "
                f"got {tuple(key.shape)} and {tuple(value.shape)}"
            )
        if self.key is None or self.value is None or self.static:
            self.key, self.value = key, value
        else:
            self.key = torch.cat([self.key, key], dim=-2)  # (B, H, S_past + S_new, Dh)
            self.value = torch.cat([self.value, value], dim=-2)  # (B, H, S_past + S_new, Dh)
        return self.key, self.value

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (in that order): beam search uses this to follow surviving beams.

        Shape:
            index: ``(B_new,)`` integer indices into the current batch.
        """
        if self.key is not None and self.value is not None:
            self.key = self.key.index_select(0, index)  # (B_new, H, S, Dh)
            self.value = self.value.index_select(0, index)  # (B_new, H, S, Dh)


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    """Split the last axis into heads: (B, N, H·Dh) -> (B, H, N, Dh), a view (Vaswani et al. 2017, §3.2.2)."""
    B, N, D = x.shape
    return x.view(B, N, num_heads, D // num_heads).transpose(1, 2)  # (B, H, N, Dh)


def merge_heads(x: Tensor) -> Tensor:
    """Concatenate the heads again: (B, H, L, Dh) -> (B, L, H·Dh), the inverse of :func:`split_heads`."""
    B, H, L, Dh = x.shape
    return x.transpose(1, 2).reshape(B, L, H * Dh)  # (B, L, D)


def _filled_static(cache: KVCache | None) -> bool:
    """Whether ``cache`` is a static (cross-attention) cache that already holds the projected memory."""
    return cache is not None and cache.static and cache.key is not None and cache.value is not None


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention (Vaswani et al. 2017, §3.2.2).

    Args:
        d_model: model width D; must be divisible by ``num_heads``.
        num_heads: number of heads H; each head has width Dh = D / H.
        bias: whether the four projections have biases.
        dropout: dropout probability on the attention weights, applied only in training mode.
        rope: optional :class:`~tformer.positional.RotaryEmbedding` (built for ``head_dim``) applied to the
            queries and keys of every head after projection (Su et al. 2021, RoFormer). Self-attention only:
            ``forward`` refuses a ``key`` that is not the ``query`` tensor itself (or a view of the same memory).
        alibi: add ALiBi's per-head distance penalty :func:`~tformer.positional.alibi_bias` to the scores
            (Press et al. 2022, §3): ``-m_h · (i - j)`` for query position i and key position j, aligned to the
            bottom right when a cache makes S > L. Self-attention only, like ``rope``; combine it with a causal
            mask (the bias does not mask future keys). No parameters.

    Parameters: ``w_q, w_k, w_v, w_o``, each ``Linear(D, D)``; 4·D² + 4·D numbers with bias, 4·D² without,
    independent of H.

    Shape:
        ``forward(query (B, L, D), key (B, S, D), value (B, S, D), mask) -> (output (B, L, D),
        weights (B, H, L, S))``; same dtype as the parameters.

    Raises:
        TypeError: if ``d_model`` or ``num_heads`` is not an int, ``dropout`` not a number, or ``bias`` or
            ``alibi`` not a bool.
        ValueError: if ``d_model`` is not divisible by ``num_heads``, a size is not positive, or ``dropout`` is
            outside ``[0, 1)``.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        *,
        bias: bool = True,
        dropout: float = 0.0,
        rope: RotaryEmbedding | None = None,
        alibi: bool = False,
    ) -> None:
        super().__init__()
        d_model = check_int("d_model", d_model, 1)
        num_heads = check_int("num_heads", num_heads, 1)
        check_divisible("d_model", d_model, "num_heads", num_heads)
        dropout = check_probability("dropout", dropout)
        self_dh = d_model // num_heads
        if rope is not None and check_type("rope", rope, RotaryEmbedding).head_dim != self_dh:
            raise ValueError(f"rope: expected a RotaryEmbedding with head_dim Dh = D / H = {self_dh}, got {rope.head_dim}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.dropout = dropout
        self.rope = rope
        self.alibi = check_bool("alibi", alibi)
        check_bool("bias", bias)
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        *,
        cache: KVCache | None = None,
        positions: Tensor | None = None,
        checked: bool = False,
    ) -> tuple[Tensor, Tensor]:
        """Attend from every query position to the keys/values, in H heads at once.

        Args:
            query: ``(B, L, D)`` floating point.
            key, value: ``(B, S, D)``; for self-attention pass the same tensor three times.
            mask: boolean, **True = may attend**, of shape ``(L, S)``, ``(B, L, S)``, ``(B, 1, 1, S)``,
                ``(B, 1, L, S)`` or ``(B, H, L, S)``, where S counts cached positions too.
            cache: optional :class:`KVCache`; the new keys/values are stored in it and attention runs over all
                cached positions (see the class docstring).
            positions: ``(L,)`` integer positions of the new queries (and keys) for RoPE; default
                ``len(cache) + arange(L)``. Ignored without ``rope``.

        Returns:
            ``(output, weights)``: output ``(B, L, D)``, weights ``(B, H, L, S)`` (rows sum to 1, or are all zero
            where the mask allows no key).

        Raises:
            TypeError: if an input is not a floating-point tensor of the parameters' dtype.
            ValueError: on a wrong rank or width, mismatched batch or key/value lengths (a filled ``cache`` of
                another batch B included), a filled ``cache`` whose keys are not in the parameters' dtype (outside
                autocast; see :func:`~tformer._checks.check_cache_dtype`), a bad mask, or RoPE or ALiBi used with
                a key that is not the query (cross-attention).

        ``checked=True``: the owning module checked these inputs in this call (see :mod:`tformer._checks`).
        """
        if not checked:
            self.check_inputs(query, key, value, mask, cache=cache, positions=positions)
        L = query.shape[1]
        q = split_heads(self.w_q(query), self.num_heads)  # (B, H, L, Dh)
        if _filled_static(cache):
            k, v = cache.key, cache.value  # type: ignore[union-attr]  # (B, H, S, Dh): the memory, projected once
        else:
            k = split_heads(self.w_k(key), self.num_heads)  # (B, H, S_new, Dh)
            v = split_heads(self.w_v(value), self.num_heads)  # (B, H, S_new, Dh)
            if self.rope is not None:
                if positions is None:
                    past = 0 if cache is None else len(cache)
                    positions = torch.arange(past, past + L, device=query.device)  # (L,)
                q = self.rope(q, positions, checked=True)  # (B, H, L, Dh)
                k = self.rope(k, positions, checked=True)  # (B, H, L, Dh)
            if cache is not None:
                k, v = cache.update(k, v)  # (B, H, S, Dh) with S = S_past + S_new
        S = k.shape[-2]
        dropout_p = self.dropout if self.training else 0.0
        bias_dtype = torch.promote_types(q.dtype, torch.float32)  # float16 scores are computed in float32
        score_bias = alibi_bias(self.num_heads, L, S, dtype=bias_dtype, device=q.device) if self.alibi else None
        heads_mask = None if mask is None else as_heads_mask(mask)  # broadcastable to (B, H, L, S)
        context, weights = attend(q, k, v, heads_mask, dropout_p, score_bias)  # bias (H, L, S)
        return self.w_o(merge_heads(context)), weights  # (B, L, D), (B, H, L, S)

    def check_inputs(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None, *,
                     cache: KVCache | None = None, positions: Tensor | None = None) -> None:
        """The checks of :meth:`forward`, for an owner that checks its own inputs once (the layers).

        Raises:
            TypeError / ValueError: as :meth:`forward`.
        """
        cached = _filled_static(cache)
        check_query_key_value(query, key, value, self.w_q.weight, keys=not cached)
        check_cache_dtype("cache", cache, self.w_q.weight)  # a filled cache of another dtype fails inside torch
        B, L, _ = query.shape
        if cached:
            S = cache.key.shape[-2]  # type: ignore[union-attr]
            if cache.key.shape[0] != B:  # type: ignore[union-attr]  # another batch would broadcast silently
                raise ValueError(f"query: expected B={cache.key.shape[0]} (the batch of the filled static cache), "  # type: ignore[union-attr]
                                 f"got B={B}; use a new KVCache for another batch, or cache.reorder(...) for beams")
        else:
            S = key.shape[1] + (0 if cache is None or cache.static else len(cache))
            relative = "rope" if self.rope is not None else "alibi" if self.alibi else None
            if relative is not None:  # m − n is meaningless across sequences
                check_self_attention(relative, query, key)
            if self.rope is not None and positions is not None:
                check_tensor("positions", positions, "int", "(L,)", L=L)
        if mask is not None:
            attention_mask_for_heads(mask, B, self.num_heads, L, S)

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> MultiHeadAttention:
        """Build an equivalent module from ``torch.nn.MultiheadAttention``'s weights (same dtype and device).

        torch packs W^Q, W^K, W^V into one ``in_proj_weight`` of shape ``(3D, D)``; we split it. Its
        ``batch_first`` flag changes only its forward's layout, not the weights, so either setting works. Note
        torch's boolean ``attn_mask``/``key_padding_mask`` use the opposite polarity (True = may *not* attend).

        Raises:
            TypeError: if ``module`` is not an ``nn.MultiheadAttention``.
            ValueError: if it uses ``kdim``/``vdim`` different from ``embed_dim``, ``add_bias_kv`` or
                ``add_zero_attn``, which this module does not implement.
        """
        check_type("module", module, nn.MultiheadAttention, "nn.MultiheadAttention")
        if not module._qkv_same_embed_dim:
            raise ValueError(
                f"module: expected kdim and vdim equal to embed_dim={module.embed_dim}, "
                f"got kdim={module.kdim}, vdim={module.vdim}"
            )
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError(
                "module: expected add_bias_kv=False and add_zero_attn=False (not implemented here), "
                f"got add_bias_kv={module.bias_k is not None}, add_zero_attn={module.add_zero_attn}"
            )
        has_bias = module.in_proj_bias is not None
        weight = module.in_proj_weight
        ours = cls(module.embed_dim, module.num_heads, bias=has_bias, dropout=module.dropout)
        ours = ours.to(device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            for i, linear in enumerate((ours.w_q, ours.w_k, ours.w_v)):
                rows = slice(i * module.embed_dim, (i + 1) * module.embed_dim)
                linear.weight.copy_(weight[rows])
                if has_bias:
                    linear.bias.copy_(module.in_proj_bias[rows])
            ours.w_o.weight.copy_(module.out_proj.weight)
            if has_bias:
                ours.w_o.bias.copy_(module.out_proj.bias)
        return ours.train(module.training)
