"""Cheaper attention: grouped-query attention, sliding windows, linear attention (``14_new_problems``).

Three answers to the costs measured in ``13_complexity``:

- :class:`GroupedQueryAttention` shrinks the key/value cache: H query heads share H_kv key/value heads
  (Ainslie et al. 2023, "GQA"); H_kv = 1 is multi-query attention (Shazeer 2019), H_kv = H is ordinary
  multi-head attention. The shared keys/values are broadcast, never copied, so the cache holds H_kv heads.
- :func:`sliding_window_mask` lets each query see only the last ``window`` keys (Beltagy et al. 2020,
  Longformer §3.1; Jiang et al. 2023, Mistral 7B §2). Stacking ℓ such layers sees 1 + ℓ·(window − 1) positions.
  A mask alone saves nothing (the scores are still computed); banded kernels are what make it O(n·window).
- :func:`linear_attention` / :class:`LinearAttention` replace softmax(QKᵀ)V by φ(Q)(φ(K)ᵀV) with
  φ(x) = elu(x) + 1 (Katharopoulos et al. 2020, "Transformers are RNNs", §3.2), which costs O(n·Dh²) instead of
  O(n²·Dh). The causal form is a running sum, i.e. a recurrence with a (Dh × Dv) state.

Masks follow the package convention: boolean, True = may attend. Dimension letters: B batch, L query length,
S key length, D ``d_model``, H query heads, H_kv key/value heads, R = H / H_kv query heads per key/value head
(Llama's ``n_rep``; the GQA paper's G is the number of groups, H_kv), Dh head width.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tformer._checks import (
    check_bool,
    check_cache_dtype,
    check_divisible,
    check_flags,
    check_int,
    check_number,
    check_probability,
    check_query_key_value,
    check_self_attention,
    check_tensor,
    check_type,
)
from tformer.attention import KVCache, MultiHeadAttention, merge_heads, split_heads
from tformer.functional import attend
from tformer.masks import as_heads_mask, attention_mask_for_heads
from tformer.positional import RotaryEmbedding

__all__ = ["GroupedQueryAttention", "LinearAttention", "elu_feature_map", "linear_attention", "sliding_window_mask"]


def sliding_window_mask(
    L: int, window: int, S: int | None = None, device: torch.device | str | None = None
) -> Tensor:
    """Causal sliding-window mask: query i may attend to keys i − window + 1 … i (``window`` keys, itself included).

    Aligned bottom-right like :func:`tformer.masks.causal_mask`: with S > L the queries are the last L positions.
    ``window >= S`` gives the plain causal mask.

    Shape:
        output ``(L, S)``, dtype bool, True = may attend.

    Raises:
        TypeError: if a size is not an int.
        ValueError: if ``L`` or ``S`` is negative, ``S < L``, or ``window < 1``.
    """
    L = check_int("L", L, 0)
    S = L if S is None else check_int("S", S)
    if S < L:
        raise ValueError(f"S: expected S >= L={L} (keys cover the queries), got {S}")
    window = check_int("window", window, 1)
    query_pos = torch.arange(S - L, S, device=device)[:, None]  # (L, 1): absolute positions of the queries
    key_pos = torch.arange(S, device=device)[None, :]  # (1, S)
    distance = query_pos - key_pos  # (L, S): how far back each key lies
    return (distance >= 0) & (distance < window)  # (L, S)


class GroupedQueryAttention(nn.Module):
    """Grouped-query attention: H query heads in H_kv groups, each group sharing one key/value head.

    Ainslie et al. 2023, "GQA: Training Generalized Multi-Query Transformer Models from Multi-Head Checkpoints",
    §2.2. Query head h uses key/value head h // R (R = H / H_kv), the order of Llama's ``repeat_kv``.
    ``num_kv_heads = num_heads`` is exactly :class:`~tformer.attention.MultiHeadAttention`;
    ``num_kv_heads = 1`` is multi-query attention (Shazeer 2019, "Fast Transformer Decoding").

    Args:
        d_model: model width D, divisible by ``num_heads``.
        num_heads: query heads H; Dh = D / H.
        num_kv_heads: key/value heads H_kv; must divide ``num_heads``.
        bias: biases on the four projections.
        dropout: dropout on the attention weights, training mode only.
        rope: optional :class:`~tformer.positional.RotaryEmbedding` built for Dh, applied to the queries and
            the (shared) keys after projection, as in :class:`~tformer.attention.MultiHeadAttention` and as
            Llama 2 does (Touvron et al. 2023, §2.2). Self-attention only (it needs S_new = L).

    Parameters: ``w_q`` and ``w_o`` are ``Linear(D, D)``; ``w_k`` and ``w_v`` are ``Linear(D, H_kv·Dh)``, so
    the key/value projections (and the cache) shrink by the factor R.

    Shape:
        ``forward(query (B, L, D), key (B, S, D), value (B, S, D), mask) -> (output (B, L, D),
        weights (B, H, L, S))``.

    Raises:
        TypeError: if a size is not an int or ``bias`` not a bool.
        ValueError: if a size is not positive, ``d_model % num_heads != 0``, ``num_heads % num_kv_heads != 0``,
            or ``rope`` is not a RotaryEmbedding of width Dh.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        num_kv_heads: int,
        *,
        bias: bool = True,
        dropout: float = 0.0,
        rope: RotaryEmbedding | None = None,
    ) -> None:
        super().__init__()
        d_model, num_heads, num_kv_heads = (check_int(name, value, 1)  # Python ints: NumPy ones could overflow
            for name, value in (("d_model", d_model), ("num_heads", num_heads), ("num_kv_heads", num_kv_heads)))
        check_divisible("d_model", d_model, "num_heads", num_heads)
        check_divisible("num_heads", num_heads, "num_kv_heads", num_kv_heads)
        dropout = check_probability("dropout", dropout)
        check_bool("bias", bias)
        self.d_model, self.num_heads, self.num_kv_heads = d_model, num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.group_size = num_heads // num_kv_heads
        self.dropout = dropout
        if rope is not None and (not isinstance(rope, RotaryEmbedding) or rope.head_dim != self.head_dim):
            got = rope.head_dim if isinstance(rope, RotaryEmbedding) else type(rope).__name__
            raise ValueError(f"rope: expected a RotaryEmbedding with head_dim Dh = D / H = {self.head_dim}, got {got}")
        self.rope = rope
        kv_width = num_kv_heads * self.head_dim
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, kv_width, bias=bias)
        self.w_v = nn.Linear(d_model, kv_width, bias=bias)
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
        """Attend with H query heads over H_kv shared key/value heads.

        Args:
            query: ``(B, L, D)``; key, value: ``(B, S_new, D)``.
            mask: bool, True = may attend, any shape :class:`~tformer.attention.MultiHeadAttention` accepts
                (``(L, S)``, ``(B, L, S)``, ``(B, 1, 1, S)``, ``(B, 1, L, S)``, ``(B, H, L, S)``), S counting
                cached positions.
            cache: optional :class:`~tformer.attention.KVCache`; it stores keys/values of shape
                ``(B, H_kv, S, Dh)`` — R times smaller than multi-head attention's.
            positions: ``(L,)`` integer positions of the new queries and keys for RoPE; default
                ``len(cache) + arange(L)``. Ignored without ``rope``.

        Returns:
            ``(output (B, L, D), weights (B, H, L, S))``.

        Raises:
            TypeError / ValueError: on a non-float input, a wrong width or rank, mismatched batch (a ``cache``
                of another batch B included), or a bad mask; ValueError with ``rope`` when ``key`` is not
                ``query`` (cross-attention, refused as :class:`~tformer.attention.MultiHeadAttention` does), or
                when a filled ``cache`` holds keys of another dtype than the parameters' (outside autocast).

        ``checked=True``: the owning module checked these inputs in this call (see :mod:`tformer._checks`).
        """
        if not checked:
            self.check_inputs(query, key, value, mask, cache=cache, positions=positions)
        B, L, _ = query.shape
        Hkv, R, Dh = self.num_kv_heads, self.group_size, self.head_dim
        q = self.w_q(query).view(B, L, Hkv, R, Dh).permute(0, 2, 3, 1, 4)  # (B, H_kv, R, L, Dh)
        k = split_heads(self.w_k(key), Hkv)  # (B, H_kv, S_new, Dh)
        v = split_heads(self.w_v(value), Hkv)  # (B, H_kv, S_new, Dh)
        if self.rope is not None:
            if positions is None:
                past = 0 if cache is None else len(cache)
                positions = torch.arange(past, past + L, device=query.device)  # (L,)
            q = self.rope(q, positions, checked=True)  # (B, H_kv, R, L, Dh): every query head rotated alike
            k = self.rope(k, positions, checked=True)  # (B, H_kv, L, Dh): rotated once, before it is cached
        if cache is not None:
            k, v = cache.update(k, v)  # (B, H_kv, S, Dh)
        S = k.shape[-2]
        if mask is not None:
            mask = as_heads_mask(mask)  # (B|1, H|1, L|1, S)
            if mask.shape[1] == 1:
                mask = mask[:, :, None]  # (B|1, 1, 1, L|1, S)
            else:
                mask = mask.reshape(mask.shape[0], Hkv, R, *mask.shape[2:])  # (B|1, H_kv, R, L|1, S)
        dropout_p = self.dropout if self.training else 0.0
        # k[:, :, None] broadcasts one key/value head over its R query heads without copying it.
        context, weights = attend(q, k[:, :, None], v[:, :, None], mask, dropout_p)  # (B, H_kv, R, L, Dh), (B, H_kv, R, L, S)
        context = context.permute(0, 3, 1, 2, 4).reshape(B, L, self.d_model)  # (B, L, D): heads concatenated
        return self.w_o(context), weights.reshape(B, self.num_heads, L, S)  # (B, L, D), (B, H, L, S)

    def check_inputs(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None, *,
                     cache: KVCache | None = None, positions: Tensor | None = None) -> None:
        """What :meth:`forward` checks, once: a 2024 block runs this, then calls in trusted (see forward's Raises)."""
        check_query_key_value(query, key, value, self.w_q.weight)
        check_cache_dtype("cache", cache, self.w_q.weight)  # a filled cache of another dtype fails inside torch
        B, L, _ = query.shape
        if self.rope is not None:
            if key.shape[1] != L:
                raise ValueError(f"rope: query length L ({L}) must equal key length S ({key.shape[1]})")
            check_self_attention("rope", query, key)  # as in MultiHeadAttention
            if positions is not None:
                check_tensor("positions", positions, "int", "(L,)", L=L)
        if mask is not None:
            S = key.shape[1] + (0 if cache is None else len(cache))
            attention_mask_for_heads(mask, B, self.num_heads, L, S)

    @classmethod
    def from_multi_head(cls, mha: MultiHeadAttention, num_kv_heads: int) -> GroupedQueryAttention:
        """Convert a trained multi-head attention: mean-pool the key and value heads of each group.

        The conversion of Ainslie et al. 2023, §2.1 (followed there by a short "uptraining"). With
        ``num_kv_heads = mha.num_heads`` it is an exact copy, so both modules give the same outputs. The
        rotary embedding, if ``mha`` has one, is shared with the new module.

        Raises:
            TypeError: if ``mha`` is not a :class:`~tformer.attention.MultiHeadAttention`.
            ValueError: if ``num_kv_heads`` does not divide ``mha.num_heads``.
        """
        check_type("mha", mha, MultiHeadAttention, "a tformer MultiHeadAttention")
        has_bias = mha.w_q.bias is not None
        weight = mha.w_q.weight
        gqa = cls(mha.d_model, mha.num_heads, num_kv_heads, bias=has_bias, dropout=mha.dropout, rope=mha.rope)
        gqa = gqa.to(device=weight.device, dtype=weight.dtype)
        Hkv, R, Dh, D = num_kv_heads, gqa.group_size, gqa.head_dim, mha.d_model
        with torch.no_grad():
            for ours, theirs in ((gqa.w_q, mha.w_q), (gqa.w_o, mha.w_o)):
                ours.weight.copy_(theirs.weight)
                if has_bias:
                    ours.bias.copy_(theirs.bias)
            for ours, theirs in ((gqa.w_k, mha.w_k), (gqa.w_v, mha.w_v)):
                ours.weight.copy_(theirs.weight.view(Hkv, R, Dh, D).mean(dim=1).reshape(Hkv * Dh, D))
                if has_bias:
                    ours.bias.copy_(theirs.bias.view(Hkv, R, Dh).mean(dim=1).reshape(Hkv * Dh))
        return gqa.train(mha.training)


def elu_feature_map(x: Tensor) -> Tensor:
    """φ(x) = elu(x) + 1, positive everywhere (Katharopoulos et al. 2020, §3.2.1, Eq. 7).

    Shape: ``x (...)`` -> same shape and dtype. Raises: whatever ``torch.nn.functional.elu`` raises (e.g. on
    integer tensors); :func:`linear_attention` checks its inputs first.
    """
    return F.elu(x) + 1.0


def linear_attention(
    query: Tensor, key: Tensor, value: Tensor, *, causal: bool = False, eps: float = 1e-6
) -> Tensor:
    """Linear attention: out_i = φ(q_i)ᵀ Σ_j φ(k_j) v_jᵀ / (φ(q_i)ᵀ Σ_j φ(k_j)), φ = :func:`elu_feature_map`.

    Katharopoulos et al. 2020, "Transformers are RNNs", §3.2, Eq. 5–6 (non-causal) and §3.3, Eq. 8–12 (causal).
    The weight of key j for query i is φ(q_i)·φ(k_j) / Σ_j' φ(q_i)·φ(k_j') — a kernel in place of exp(q·k/√Dh);
    by associativity the n × n weights are never formed. Non-causal cost O(n·Dh·Dv). The causal form sums only
    j ≤ i with a running sum over positions; this teaching version keeps every prefix state, (..., L, Dh, Dv)
    numbers, where the paper's kernel keeps one.

    Shape:
        query ``(..., L, Dh)``, key ``(..., S, Dh)``, value ``(..., S, Dv)`` -> ``(..., L, Dv)``; causal needs
        L = S.

    Raises:
        TypeError: if an input is not a floating-point tensor, or key or value has another dtype than query.
        ValueError: if an input has fewer than 2 dimensions or the shapes disagree (Dh, S, or L != S when
            causal).
    """
    check_tensor("query", query, "float", "(..., L, Dh)")
    check_tensor("key", key, "float", "(..., S, Dh)", Dh=query.shape[-1])
    check_tensor("value", value, "float", "(..., S, Dv)", S=key.shape[-2])
    for name, t in (("key", key), ("value", value)):
        check_tensor(name, t, dtype=query.dtype, of="query")
    check_bool("causal", causal)
    check_number("eps", eps, 0.0)
    q, k = elu_feature_map(query), elu_feature_map(key)  # (..., L, Dh), (..., S, Dh)
    if not causal:
        kv = k.transpose(-2, -1) @ value  # (..., Dh, Dv): Σ_j φ(k_j) v_jᵀ
        normaliser = q @ k.sum(dim=-2).unsqueeze(-1)  # (..., L, 1)
        return (q @ kv) / (normaliser + eps)  # (..., L, Dv)
    if query.shape[-2] != key.shape[-2]:
        raise ValueError(f"causal: expected L == S, got L={query.shape[-2]}, S={key.shape[-2]}")
    kv = torch.einsum("...sd,...se->...sde", k, value).cumsum(dim=-3)  # (..., L, Dh, Dv): prefix sums
    k_sum = k.cumsum(dim=-2)  # (..., L, Dh)
    numerator = torch.einsum("...ld,...lde->...le", q, kv)  # (..., L, Dv)
    normaliser = (q * k_sum).sum(dim=-1, keepdim=True)  # (..., L, 1)
    return numerator / (normaliser + eps)  # (..., L, Dv)


class LinearAttention(nn.Module):
    """Multi-head linear attention: the projections of multi-head attention around :func:`linear_attention`.

    Katharopoulos et al. 2020, §3.2. There are no attention weights to return: they are never formed.

    Args:
        d_model, num_heads, bias: as :class:`~tformer.attention.MultiHeadAttention`.

    Shape:
        ``forward(query (B, L, D), key (B, S, D), value (B, S, D), *, causal=False) -> (B, L, D)``.

    Raises:
        ValueError: if ``d_model`` is not divisible by ``num_heads`` or a size is not positive (TypeError if not
            an int); in ``forward``, on a wrong rank or width or mismatched batch sizes.
    """

    def __init__(self, d_model: int, num_heads: int, *, bias: bool = True) -> None:
        check_flags(bias=bias)
        super().__init__()
        d_model = check_int("d_model", d_model, 1)
        num_heads = check_int("num_heads", num_heads, 1)
        check_divisible("d_model", d_model, "num_heads", num_heads)
        self.d_model, self.num_heads, self.head_dim = d_model, num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, *, causal: bool = False) -> Tensor:
        """Linear attention in H heads; ``causal=True`` lets position i see keys 0 … i only (needs L = S)."""
        check_query_key_value(query, key, value, self.w_q.weight)
        H = self.num_heads
        q, k, v = (split_heads(self.w_q(query), H), split_heads(self.w_k(key), H), split_heads(self.w_v(value), H))
        context = linear_attention(q, k, v, causal=causal)  # (B, H, L, Dh)
        return self.w_o(merge_heads(context))  # (B, L, D)
