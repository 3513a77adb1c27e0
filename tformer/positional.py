"""Positional information: sinusoidal, learned, rotary and ALiBi (introduced in ``08_positional_encoding``).

Attention alone is permutation-equivariant, so word order must be injected:

- :func:`sinusoidal_positional_encoding` and :class:`SinusoidalPositionalEncoding` — fixed table added to the
  embeddings (Vaswani et al. 2017, §3.5).
- :class:`LearnedPositionalEmbedding` — a trained table added to the embeddings (as in BERT and GPT-2).
- :class:`RotaryEmbedding` — rotates queries and keys by a position-dependent angle so that q_m·k_n depends only
  on m − n (Su et al. 2021, RoFormer, §3.4.2).
- :func:`alibi_slopes` and :func:`alibi_bias` — ALiBi (Press et al. 2022, "Train Short, Test Long", §3): nothing
  is added to the embeddings; each head h adds ``-m_h · (i - j)`` to the score of query i on key j, so attention
  fades linearly with distance into the past, at a rate per head. For H a power of two m_h = 2^(-8h/H), h = 1 … H
  (8 heads: 1/2, 1/4, …, 1/256); for other H the authors' reference code (ofirpress/attention_with_linear_biases,
  ``get_slopes``) takes the slopes of the closest smaller power of two n, then every other slope of 2n:
  6 heads → [1/4, 1/16, 1/64, 1/256, 1/2, 1/8] (the naive 2^(-8h/6) is a different set). The bias is additive
  and float, not a mask: :func:`tformer.functional.scaled_dot_product_attention` takes it as ``score_bias``,
  :class:`tformer.attention.MultiHeadAttention` adds it when built with ``alibi=True``
  (``DecoderOnlyTransformer(..., positional="alibi")``). Outside tformer, pass
  ``alibi_bias(...).masked_fill(~causal_mask(L, S), -inf)`` as the float ``attn_mask`` of
  ``torch.nn.functional.scaled_dot_product_attention``.

The sinusoidal table is a non-persistent buffer (it moves with ``.to(device)``, is not saved in ``state_dict``)
and grows when a longer input arrives. It is computed and kept in float64 (so float64 runs are exact; a module
``.to(dtype)`` converts it like any buffer), and each call casts only the rows it uses to the input's dtype.
RoPE's cos/sin are computed in float64 for each call's positions and rounded once to the input's dtype.

Dimension letters: B batch, L (query) length, S key length, D ``d_model``, H heads, Dh head dimension.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from tformer._checks import check_int, check_number, check_tensor, check_type, is_number

__all__ = [
    "LearnedPositionalEmbedding",
    "RotaryEmbedding",
    "SinusoidalPositionalEncoding",
    "alibi_bias",
    "alibi_slopes",
    "sinusoidal_positional_encoding",
]


def sinusoidal_positional_encoding(
    max_len: int, d_model: int, *, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None
) -> Tensor:
    """The sinusoidal table PE[pos, 2i] = sin(pos / 10000^(2i/D)), PE[pos, 2i+1] = cos(pos / 10000^(2i/D)).

    Vaswani et al. 2017, §3.5. Odd ``d_model`` is supported: the last column is then a sine. Computed in
    float64 and rounded once to ``dtype``.

    Shape:
        - output: ``(max_len, d_model)``; row ``pos`` is the encoding of position ``pos`` (0-based).

    Raises:
        TypeError: if ``max_len`` or ``d_model`` is not an int, or ``dtype`` is not a floating-point dtype.
        ValueError: if ``max_len < 0`` or ``d_model < 1``.
    """
    max_len = check_int("max_len", max_len, 0)
    d_model = check_int("d_model", d_model, 1)
    if not check_type("dtype", dtype, torch.dtype, "a floating-point torch.dtype").is_floating_point:
        raise TypeError(f"dtype: expected a floating-point torch.dtype (values lie in [-1, 1]), got {dtype}")
    position = torch.arange(max_len, dtype=torch.float64, device=device)  # (max_len,)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64, device=device)  # (ceil(D/2),)
    angles = position[:, None] / 10000.0 ** (two_i / d_model)  # (max_len, ceil(D/2))
    pe = torch.empty(max_len, d_model, dtype=torch.float64, device=device)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return pe.to(dtype)  # (max_len, D)


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal table to token embeddings, then applies dropout (Vaswani et al. 2017, §3.5).

    The embeddings' ×√D scaling (§3.4) belongs to the embedding layer, not here. The table is a
    non-persistent buffer that grows when a longer input (or a larger ``offset``) arrives, so ``max_len`` is
    only the initial size.

    Shape:
        - x: ``(B, L, D)`` (any leading dimensions)
        - output: same shape and dtype as ``x``: ``x + PE[offset : offset + L]``, then dropout

    Args:
        d_model: D, the embedding width.
        max_len: initial table length.
        dropout: dropout probability after the addition (§5.4 uses 0.1).

    Raises:
        TypeError / ValueError: on bad sizes here, or in ``forward`` on a non-float ``x``, a wrong last
        dimension, or a negative ``offset``.
    """


    pe: Tensor

    def __init__(self, d_model: int, max_len: int = 512, dropout: float = 0.0) -> None:
        super().__init__()
        self.d_model = check_int("d_model", d_model, 1)
        max_len = check_int("max_len", max_len, 0)
        self.dropout = nn.Dropout(dropout)
        table = sinusoidal_positional_encoding(max_len, d_model, dtype=torch.float64)
        self.register_buffer("pe", table, persistent=False)  # (max_len, D)

    def forward(self, x: Tensor, offset: int = 0, *, checked: bool = False) -> Tensor:
        """Return ``dropout(x + PE[offset : offset + L])``; ``offset`` is the first position (cached decoding).

        ``checked=True``: the owning module checked these inputs in this call (see :mod:`tformer._checks`).
        """
        if not checked:
            check_tensor("x", x, "float", "(..., L, D)", D=self.d_model)
            offset = check_int("offset", offset, 0)
        end = offset + x.shape[-2]
        if end > self.pe.shape[0]:
            table = sinusoidal_positional_encoding(
                max(end, 2 * self.pe.shape[0]), self.d_model, dtype=torch.float64
            )
            self.pe = table.to(device=self.pe.device, dtype=self.pe.dtype)
        return self.dropout(x + self.pe[offset:end].to(x.dtype))  # (B, L, D)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, table_len={self.pe.shape[0]}"


class LearnedPositionalEmbedding(nn.Module):
    """Adds a trained table E[pos] to token embeddings (BERT and GPT-2 style; Vaswani et al. 2017, §3.5 compare).

    Initialised from N(0, std²), by default std = 0.02 as in Hugging Face's GPT-2 (OpenAI's code uses 0.01),
    and kept so inside a model:
    ``keeps_own_init`` tells :func:`tformer.models.init_weights` to leave this table alone. (GPT-2 starts its
    token embeddings at N(0, 0.02²); the book's models scale theirs by √D to about unit size, so they pass a
    larger ``std``, see :class:`tformer.models.ModelConfig`.) Unlike the sinusoidal table it cannot grow:
    positions beyond ``max_len`` were never trained.

    Shape:
        - x: ``(B, L, D)`` (any leading dimensions)
        - output: same shape and dtype as ``x``: ``x + E[offset : offset + L]``

    Raises:
        ValueError: in ``forward`` when ``offset + L > max_len`` (the message names both), or on a wrong last
            dimension / negative ``offset``; a ``std`` that is not positive. TypeError: on a non-float ``x``,
            non-int sizes or a ``std`` that is not a number.
    """


    keeps_own_init = True  # the N(0, std²) start is part of the design, not a placeholder for Xavier

    def __init__(self, max_len: int, d_model: int, *, std: float = 0.02) -> None:
        super().__init__()
        self.max_len = check_int("max_len", max_len, 1)
        self.d_model = check_int("d_model", d_model, 1)
        if not is_number(std):
            raise TypeError(f"std: expected a positive number, got {type(std).__name__}")
        if not 0 < std < float("inf"):  # also refuses NaN; inf would fill the table with ±inf
            raise ValueError(f"std: expected a finite positive number, got {std}")
        self.embedding = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embedding.weight, mean=0.0, std=std)

    def forward(self, x: Tensor, offset: int = 0, *, checked: bool = False) -> Tensor:
        """Return ``x + E[offset : offset + L]``; ``offset`` is the first position (cached decoding).

        ``checked=True``: the owning module checked these inputs in this call (see :mod:`tformer._checks`).
        """
        if not checked:
            check_tensor("x", x, "float", "(..., L, D)", D=self.d_model)
            offset = check_int("offset", offset, 0)
            end = offset + x.shape[-2]
            if end > self.max_len:
                raise ValueError(
                    f"x: expected positions offset + L <= max_len={self.max_len}, got {offset} + {x.shape[-2]} = {end}"
                )
        end = offset + x.shape[-2]
        return x + self.embedding.weight[offset:end].to(x.dtype)  # (B, L, D), x's dtype as the sinusoidal table


class RotaryEmbedding(nn.Module):
    """Rotary position embedding (RoPE): rotate each pair of features by angle ``m·θ_j`` (Su et al. 2021, §3.4.2).

    **Pairing convention: half-split** (GPT-NeoX; Hugging Face's port of Llama): feature ``j`` is paired with feature ``j + Dh/2``
    for ``j = 0 .. Dh/2 − 1``, with frequency ``θ_j = base^(−2j/Dh)``. At position ``m`` the pair
    ``(x_j, x_{j+Dh/2})`` becomes ``(x_j cos mθ_j − x_{j+Dh/2} sin mθ_j, x_j sin mθ_j + x_{j+Dh/2} cos mθ_j)``.
    (The paper, and Meta's own LLaMA code, pair neighbours, ``(x_{2j}, x_{2j+1})``; the two are the same
    rotation after a fixed permutation of features, which trained projections absorb: Hugging Face permutes
    LLaMA's W_Q and W_K rows when it converts the checkpoints.)

    Applied to queries and keys (not values) after the head split, it makes q_m·k_n depend only on m − n and
    leaves every vector's norm unchanged. cos and sin are computed for the positions of each call (as Hugging
    Face's ``LlamaRotaryEmbedding`` does), so there is no table to outgrow and nothing in ``state_dict``;
    ``max_len`` is kept only so the three positional modules are built alike.

    Call as ``rope(x, positions)``.

    Shape:
        - x: ``(..., L, Dh)``, floating point
        - positions: ``(L,)`` integer tensor; any integers (a negative position rotates the other way)
        - output: same shape and dtype as ``x``

    Raises:
        ValueError: odd or non-positive ``head_dim``; a ``base`` not finite and > 0; in ``forward``, a wrong last
            dimension or ``positions`` not of shape ``(L,)``.
        TypeError: ``base`` not a number; non-integer ``positions``; non-float ``x``.
    """

    def __init__(self, head_dim: int, base: float = 10000.0, max_len: int = 512) -> None:
        super().__init__()
        head_dim = check_int("head_dim", head_dim, 1)
        if head_dim % 2:
            raise ValueError(f"head_dim: expected an even number (RoPE rotates pairs of features), got {head_dim}")
        self.head_dim = head_dim
        self.base = check_number("base", base, 0.0, open_min=True, finite=True)  # ∞ would freeze all but one pair
        self.max_len = check_int("max_len", max_len, 0)

    def forward(self, x: Tensor, positions: Tensor, *, checked: bool = False) -> Tensor:
        """Rotate ``x`` (queries or keys) to its ``positions``.

        ``checked=True``: the owning module checked these inputs in this call (see :mod:`tformer._checks`).
        """
        if not checked:
            check_tensor("x", x, "float", "(..., L, Dh)", Dh=self.head_dim)
            check_tensor("positions", positions, "int", "(L,)", L=x.shape[-2])
        # cos and sin of m·θ_j for the positions asked for, in float64 and rounded once to x's dtype. Computed
        # per call (L·Dh/2 numbers) rather than read from a table, which would have to grow to the largest
        # position: reading that position from an accelerator would stall the host on every call.
        j = torch.arange(self.head_dim // 2, dtype=torch.float64, device=positions.device)
        theta = self.base ** (-2.0 * j / self.head_dim)  # (Dh/2,)
        angles = positions.to(torch.float64)[:, None] * theta[None, :]  # (L, Dh/2)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)  # (L, Dh/2) each
        x1, x2 = x.chunk(2, dim=-1)  # (..., L, Dh/2) each: the two halves of every pair
        return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)  # (..., L, Dh)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, base={self.base}, convention=half-split"


# ---------------------------------------------------------------- ALiBi (see the module docstring)


def _geometric_slopes(n: int) -> list[float]:
    """2^(-8h/n) for h = 1 … n (exact for the powers of two among them)."""
    return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]


def alibi_slopes(
    num_heads: int, *, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None
) -> Tensor:
    """The ALiBi slope m_h of every head (Press et al. 2022, §3; the reference code's rule for any H).

    H a power of two: m_h = 2^(-8h/H), h = 1 … H. Otherwise, with n the largest power of two below H: the n
    slopes of n heads, then the slopes of 2n heads at odd h (every other one, starting with the first), H − n of
    them. 4 heads → [1/4, 1/16, 1/64, 1/256]; 6 heads → [1/4, 1/16, 1/64, 1/256, 1/2, 1/8].

    Shape:
        output ``(H,)``, in ``dtype`` (default float32), on ``device``.

    Raises:
        TypeError: if ``num_heads`` is not an int, or ``dtype`` is not a floating-point dtype (slopes below 1
            would round to 0 in an integer dtype).
        ValueError: if ``num_heads < 1``.
    """
    H = check_int("num_heads", num_heads, 1)
    _check_float_dtype(dtype)
    n = 1 << (H.bit_length() - 1)  # the largest power of two ≤ H
    slopes = _geometric_slopes(n) + _geometric_slopes(2 * n)[0::2][: H - n]
    return torch.tensor(slopes, dtype=dtype, device=device)  # (H,)


def alibi_bias(
    num_heads: int,
    L: int,
    S: int | None = None,
    *,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> Tensor:
    """The additive ALiBi bias ``-m_h · (distance from query i back to key j)``, one ``(L, S)`` plane per head.

    Aligned like :func:`tformer.masks.causal_mask`: when ``S > L`` the L queries are the last L positions, so
    query i sits at position ``S - L + i`` and its bias on key j is ``-m_h · (S - L + i - j)``; with ``L = 1``
    (one new token during cached decoding) the row equals the last row of the full ``(S, S)`` bias. Future keys
    (``j > S - L + i``) get 0: the bias does not mask them, combine it with ``causal_mask(L, S)``.

    Press et al. 2022, §3: softmax(q_i Kᵀ + m · [-(i-1), …, -2, -1, 0]) (scores scaled by 1/√Dh as usual).

    Shape:
        output ``(H, L, S)``, in ``dtype``; add it to scores ``(B, H, L, S)`` (it broadcasts over B).

    The product is computed in float32 (float64 when ``dtype`` is float64) and cast to ``dtype`` once, so in
    float16 a long distance gives a large finite bias (or -inf only where the bias itself exceeds float16's
    range), not -inf from a distance that overflowed before the multiplication.

    Raises:
        TypeError: if ``num_heads``, ``L`` or ``S`` is not an int, or ``dtype`` is not a floating-point dtype.
        ValueError: if ``num_heads < 1``, ``L`` or ``S`` is negative, or ``S < L``.
    """
    compute = torch.promote_types(_check_float_dtype(dtype), torch.float32)
    slopes = alibi_slopes(num_heads, dtype=compute, device=device)  # (H,)
    L = check_int("L", L, 0)
    S = L if S is None else check_int("S", S, 0)
    if S < L:
        raise ValueError(f"S: expected S >= L for a bottom-right aligned bias, got L={L}, S={S}")
    query_pos = torch.arange(S - L, S, device=device)[:, None]  # (L, 1): positions of the queries
    key_pos = torch.arange(S, device=device)[None, :]  # (1, S)
    offset = (key_pos - query_pos).clamp(max=0).to(compute)  # (L, S): -(how far back each key is); 0 ahead
    return (slopes[:, None, None] * offset).to(dtype)  # (H, L, S)


def _check_float_dtype(dtype: object) -> torch.dtype:
    """Return ``dtype`` if it is a floating-point ``torch.dtype``; TypeError naming ``dtype`` otherwise."""
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype: expected a floating-point torch.dtype, got {dtype}")
    return dtype
