"""Boolean attention masks, True = may attend (introduced in ``06_self_attention_and_masks``).

One convention across the package, the same as ``torch.nn.functional.scaled_dot_product_attention``: a mask is a
bool tensor, ``True`` where a query may attend to a key, broadcastable to ``(B, H, L, S)``.
(``torch.nn.MultiheadAttention`` and ``nn.Transformer`` use the opposite polarity, True = blocked; invert only at
that boundary.)

- :func:`causal_mask` ``(L, S)``: no peeking at the future (Vaswani et al. 2017, §3.2.3).
- :func:`padding_mask` / :func:`padding_mask_from_tokens` ``(B, S)``: True at real tokens, False at padding.
- :func:`as_key_padding` turns a ``(B, S)`` padding mask into ``(B, 1, 1, S)``, the shape attention accepts.
- :func:`attention_mask_for_heads`: the one broadcasting helper ``MultiHeadAttention`` uses (it checks the shape,
  then :func:`as_heads_mask` adds the missing axes).

Dimension letters: B batch, H heads, L query length, S key length.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from tformer._checks import check_int, check_tensor, check_type, values_are_cheap

__all__ = [
    "as_heads_mask",
    "as_key_padding",
    "attention_mask_for_heads",
    "causal_mask",
    "padding_mask",
    "padding_mask_from_tokens",
]


def causal_mask(L: int, S: int | None = None, device: torch.device | str | None = None) -> Tensor:
    """Causal (look-ahead) mask: query ``i`` may attend to keys at positions ``<=`` its own.

    Aligned to the bottom-right: when ``S > L`` the ``L`` queries are the *last* ``L`` positions, so query ``i``
    sits at position ``S - L + i`` and sees keys ``0 .. S - L + i``. With ``L = 1`` (one new token during cached
    decoding) the query sees all ``S`` keys. Same as ``torch.nn.attention.bias.causal_lower_right``.

    Vaswani et al. 2017, §3.2.3 ("masking out ... all values ... which correspond to illegal connections").

    Shape:
        - output: ``(L, S)``, dtype ``torch.bool``; True on and below the (bottom-right aligned) diagonal.

    Args:
        L: number of queries.
        S: number of keys; defaults to ``L``.
        device: where to create the mask.

    Raises:
        TypeError: if ``L`` or ``S`` is not an int.
        ValueError: if ``L`` or ``S`` is negative, or ``S < L`` (the first queries would see no key at all;
            with bottom-right alignment that is never what a decoder wants).
    """
    L = check_int("L", L, 0)
    S = L if S is None else check_int("S", S, 0)
    if S < L:
        raise ValueError(f"S: expected S >= L for a bottom-right aligned causal mask, got L={L}, S={S}")
    return torch.ones(L, S, dtype=torch.bool, device=device).tril(diagonal=S - L)  # (L, S)


def padding_mask(lengths: Tensor | Sequence[int], S: int) -> Tensor:
    """Key padding mask from sequence lengths: True at the first ``lengths[b]`` positions of row ``b``.

    Pass it to attention as ``as_key_padding(mask)`` (that is ``mask[:, None, None, :]``), shape
    ``(B, 1, 1, S)``, so it broadcasts over heads and queries.

    Shape:
        - lengths: ``(B,)`` integer tensor, or a list/tuple of ``B`` ints
        - output: ``(B, S)``, dtype ``torch.bool``, on the device of ``lengths``

    Raises:
        TypeError: if ``lengths`` is not an integer tensor or a sequence of ints, or ``S`` is not an int.
        ValueError: if ``lengths`` is not 1-D, or a length is negative or greater than ``S`` (checked on a CPU
            tensor; an accelerator's lengths are trusted, to spare a host-device sync).
    """
    S = check_int("S", S, 0)
    if not isinstance(lengths, Tensor):
        check_type("lengths", lengths, (list, tuple), "a (B,) integer tensor or a list of ints")
        for n in lengths:
            check_int("lengths", n)
        lengths = torch.tensor(lengths, dtype=torch.long)
    check_tensor("lengths", lengths, "int", "(B,)")
    if values_are_cheap(lengths) and (int(lengths.min()) < 0 or int(lengths.max()) > S):
        raise ValueError(f"lengths: expected every length in [0, S={S}], got {lengths.tolist()}")
    positions = torch.arange(S, device=lengths.device)  # (S,)
    return positions[None, :] < lengths[:, None]  # (B, S)


def padding_mask_from_tokens(tokens: Tensor, pad_id: int) -> Tensor:
    """Key padding mask from token ids: True wherever ``tokens != pad_id``.

    Every ``pad_id`` is masked, wherever it sits (left, right or in the middle of a row).

    Shape:
        - tokens: ``(B, S)`` integer tensor
        - output: ``(B, S)``, dtype ``torch.bool``

    Raises:
        TypeError: if ``tokens`` is not an integer tensor or ``pad_id`` not an int.
        ValueError: if ``tokens`` is not 2-D.
    """
    check_tensor("tokens", tokens, "int", "(B, S)")
    pad_id = check_int("pad_id", pad_id)
    return tokens != pad_id  # (B, S)


def as_key_padding(mask: Tensor) -> Tensor:
    """Reshape a ``(B, S)`` key padding mask to ``(B, 1, 1, S)`` so it broadcasts over heads and queries.

    Shape:
        - mask: ``(B, S)``, dtype ``torch.bool``
        - output: ``(B, 1, 1, S)``, a view of ``mask``

    Raises:
        TypeError: if ``mask`` is not a bool tensor.
        ValueError: if ``mask`` is not 2-D.
    """
    check_tensor("mask", mask, "bool", "(B, S)")
    return mask[:, None, None, :]  # (B, 1, 1, S)


def attention_mask_for_heads(mask: Tensor, batch_size: int, num_heads: int, L: int, S: int) -> Tensor:
    """Bring a user's mask to 4-D, broadcastable to ``(B, H, L, S)``; the one helper ``MultiHeadAttention`` uses.

    Accepted shapes (each size may also be 1, meaning "broadcast"):

    - ``(L, S)``: one mask for every sequence and head (e.g. :func:`causal_mask`) -> ``(1, 1, L, S)``
    - ``(B, L, S)``: one mask per sequence; a head axis is inserted -> ``(B, 1, L, S)``. A 3-D mask is never
      broadcast against the heads axis.
    - ``(B, 1, 1, S)`` (key padding, see :func:`as_key_padding`), ``(B, 1, L, S)``, ``(B, H, L, S)``: unchanged.

    A 2-D ``(B, S)`` padding mask is *not* accepted: when ``B == L`` it cannot be told apart from ``(L, S)``.
    Pass ``as_key_padding(mask)`` (``mask[:, None, None, :]``) instead.

    Shape:
        - mask: bool, one of the shapes above
        - output: 4-D bool view of ``mask``, broadcastable to ``(B, H, L, S)``

    Raises:
        TypeError: if ``mask`` is not a bool tensor (True = may attend).
        ValueError: if ``mask`` is not 2-, 3- or 4-D or does not broadcast to the expected shape; the message
            names the expected and received shapes in the letters B H L S.
    """
    check_tensor("mask", mask, "bool")
    shape = tuple(mask.shape)
    if mask.dim() == 2:
        if not _fits(shape, (L, S)):
            hint = ""
            if shape == (batch_size, S):
                hint = "; for a (B, S) key padding mask pass as_key_padding(mask), shape (B, 1, 1, S)"
            raise ValueError(f"mask: expected (L, S)=({L}, {S}) for a 2-D mask, got {shape}{hint}")
    elif mask.dim() == 3:
        if not _fits(shape, (batch_size, L, S)):
            raise ValueError(
                f"mask: expected (B, L, S)=({batch_size}, {L}, {S}) for a 3-D mask, got {shape}; "
                "use a 4-D (B, H, L, S) mask for per-head masks"
            )
    elif mask.dim() == 4:
        if not _fits(shape, (batch_size, num_heads, L, S)):
            raise ValueError(
                f"mask: expected a 4-D mask broadcastable to (B, H, L, S)=({batch_size}, {num_heads}, {L}, {S}), "
                f"got {shape}"
            )
    else:
        raise ValueError(
            f"mask: expected (L, S), (B, L, S) or (B, H, L, S) with B={batch_size}, H={num_heads}, L={L}, S={S}, "
            f"got {mask.dim()}-D shape {shape}"
        )
    return as_heads_mask(mask)


def as_heads_mask(mask: Tensor) -> Tensor:
    """The 4-D view of a checked ``(L, S)``, ``(B, L, S)`` or 4-D mask: the axes :func:`attention_mask_for_heads`
    adds, without its checks (for callers that checked the mask, or built it themselves).

    Shape:
        ``(L, S) -> (1, 1, L, S)``; ``(B, L, S) -> (B, 1, L, S)``; a 4-D mask is returned as it is.

    Raises:
        Nothing: the shape is trusted.
    """
    if mask.dim() == 2:
        return mask[None, None]  # (1, 1, L, S)
    if mask.dim() == 3:
        return mask[:, None]  # (B, 1, L, S)
    return mask  # (B|1, H|1, L|1, S|1)


def _fits(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """True when ``shape`` has ``target``'s rank and each size equals the target's or is 1."""
    return len(shape) == len(target) and all(n in (1, t) for n, t in zip(shape, target, strict=True))
