"""Scaled dot-product attention: the one place the attention maths lives (introduced in ``05_hand_calculation``).

:func:`scaled_dot_product_attention` is the door a reader calls: it checks its arguments, then runs
:func:`attend`, the formula itself. The package's attention modules (``MultiHeadAttention``,
``GroupedQueryAttention``) check their own inputs once and call :func:`attend` directly; nothing re-implements
it.

Dimension letters: B batch, H heads, L query length, S key length, Dh head (key) dimension, Dv value dimension.
"..." stands for any number of leading batch dimensions (for example ``(B, H)``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from tformer._checks import check_probability, check_tensor, values_are_cheap

__all__ = ["attend", "scaled_dot_product_attention"]


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    *,
    score_bias: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Attention(Q, K, V) = softmax(Q Kᵀ / √Dh + score_bias) V, returning the output and the weights.

    Vaswani et al. 2017, "Attention Is All You Need", §3.2.1, Eq. 1. ``score_bias`` (default none) is an additive
    float term on the scaled scores, such as ALiBi's distance penalty (Press et al. 2022, §3; see
    :func:`tformer.positional.alibi_bias`). It is not a mask: what may not be attended to is still said by
    the boolean ``mask``, applied after the bias.

    The mask follows ``torch.nn.functional.scaled_dot_product_attention``: boolean, ``True`` = may attend.
    Masked scores become ``-inf`` before the softmax (never ``-1e9``, which overflows float16). A query row
    whose keys are *all* masked has no sensible softmax; here it gets all-zero weights and an all-zero output,
    and its gradients are zero too (no NaN, forward or backward, in float32, float16 or bfloat16).

    Dropout, when ``dropout_p > 0``, is applied to the weights; the caller decides train or eval (pass
    ``dropout_p=0.0`` in eval). The returned weights are the ones actually used, so
    ``output == weights @ value`` holds exactly in float32 and float64.

    float16 and bfloat16 inputs are computed in float32 and both results rounded once to the input dtype, as
    torch's fused kernels accumulate in float32: rounding the scores and weights on the way as well gave
    bfloat16 errors up to 0.012 against float32 (0.008 when rounding once).

    When autograd is off (``torch.no_grad()``, or no input requires grad) the same steps run in place on the
    score tensor (``_attention_without_autograd``), which saves ``(..., L, S)`` allocations; the numbers are
    the same.

    Shape:
        - query: ``(..., L, Dh)``
        - key: ``(..., S, Dh)``
        - value: ``(..., S, Dv)``
        - mask: bool, broadcastable to ``(..., L, S)`` (for example ``(L, S)``, ``(B, 1, 1, S)``,
          ``(B, 1, L, S)`` or ``(B, H, L, S)``)
        - score_bias: floating point, broadcastable to ``(..., L, S)`` (ALiBi: ``(H, L, S)``)
        - output: ``(..., L, Dv)``, same dtype as ``query``
        - weights: ``(..., L, S)``, same dtype as ``query``; each unmasked row sums to 1

    Args:
        query, key, value: floating-point tensors of one dtype; leading dimensions broadcast.
        mask: optional bool tensor, ``True`` where a query may attend to a key.
        dropout_p: probability of zeroing a weight, ``0 <= dropout_p < 1``.
        score_bias: optional float tensor added to the scaled scores before the mask and the softmax; computed
            in the scores' dtype (float32 for float16/bfloat16 inputs).

    Returns:
        ``(output, weights)``.

    Raises:
        TypeError: if an input is not a tensor, is not floating point, or the dtypes differ; if ``mask`` is
            not bool (a float/additive mask is rejected: pass a bool mask, True = may attend); if
            ``dropout_p`` is not a number; if ``score_bias`` is not a floating-point tensor.
        ValueError: if ``query`` and ``key`` differ in Dh, Dh is 0, ``key`` and ``value`` differ in S, an
            input has fewer than 2 dimensions or is on another device than ``query``, the leading dimensions do
            not broadcast, ``mask`` does not broadcast to ``(..., L, S)`` or is on another device, or
            ``dropout_p`` is outside ``[0, 1)``, or ``score_bias`` does not broadcast to ``(..., L, S)``, is
            on another device, or holds an infinite or NaN value (a row of ``-inf`` would give NaN weights: say
            what may not be attended with ``mask``, whose fully masked rows get zero weights). Like every value
            check (:func:`tformer._checks.values_are_cheap`), this one runs on a CPU tensor outside
            ``torch.compile`` only; elsewhere the bias is trusted.
    """
    _check_arguments(query, key, value, mask, dropout_p, score_bias)
    return attend(query, key, value, mask, dropout_p, score_bias)


def attend(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None, dropout_p: float = 0.0,
           score_bias: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """softmax(Q Kᵀ / √Dh + score_bias) V without the argument checks: :func:`scaled_dot_product_attention`'s body.

    For callers that have checked their inputs already (the attention modules check theirs where a user calls
    in); shapes, dtypes, masking and results are those of :func:`scaled_dot_product_attention`. A bad input
    here fails inside torch, with torch's message. When no gradient is needed the steps run in place
    (``_attention_without_autograd``, the same numbers).

    Shape:
        query ``(..., L, Dh)``, key ``(..., S, Dh)``, value ``(..., S, Dv)``, bool mask and float score_bias
        broadcastable to ``(..., L, S)`` -> output ``(..., L, Dv)``, weights ``(..., L, S)``.

    Raises:
        Nothing of its own (see above).
    """
    if not (torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value, score_bias)
                                            if t is not None)):
        return _attention_without_autograd(query, key, value, mask, dropout_p, score_bias)

    q, k, v = _compute_dtype(query, key, value)
    # Scaling Q costs L·Dh multiplications, scaling the scores L·S: cheaper only when S > Dh (long inputs).
    scores = torch.matmul(q * (1.0 / math.sqrt(q.shape[-1])), k.transpose(-2, -1))  # (..., L, S): Q Kᵀ / √Dh
    if score_bias is not None:
        scores = scores + score_bias.to(scores.dtype)  # (..., L, S): + ALiBi-style bias
    if mask is not None:
        has_key = mask.any(dim=-1, keepdim=True)  # (..., L, 1)
        scores = torch.where(mask, scores, _masked_score(has_key, scores))  # (..., L, S): + mask
    weights = torch.softmax(scores, dim=-1)  # (..., L, S)
    if mask is not None:
        weights = weights.masked_fill(has_key.logical_not(), 0.0)  # a row with no key attends to nothing
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p, training=True)
    output = torch.matmul(weights, v)  # (..., L, Dv)
    return output.to(query.dtype), weights.to(query.dtype)


def _compute_dtype(query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """float16/bfloat16 inputs in float32 (results are rounded once at the end); other dtypes unchanged."""
    if query.dtype in (torch.float16, torch.bfloat16):
        return query.float(), key.float(), value.float()
    return query, key, value


def _masked_score(has_key: Tensor, scores: Tensor) -> Tensor:
    """The score a masked key gets: ``-inf``, or 0 in a row with no allowed key at all.

    A row of only ``-inf`` would give NaN; a row of zeros gives a harmless uniform softmax, zeroed afterwards.
    ``torch.where``'s gradient is zero at the filled positions, so such rows get zero gradients as well.
    """
    return torch.where(has_key, float("-inf"), 0.0).to(scores.dtype)  # (..., L, 1)


def _attention_without_autograd(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, dropout_p: float, score_bias: Tensor | None
) -> tuple[Tensor, Tensor]:
    """:func:`scaled_dot_product_attention` when no gradient is needed: the same steps, in place.

    The speed path that ``benchmarks/attention_speed.py`` measures: the mask, the softmax and the dropout
    overwrite the score tensor instead of allocating a new ``(..., L, S)`` tensor at each step. On a CPU the
    one broadcast ``torch.where(..., out=scores)`` is also about 1.5x faster than ``masked_fill_``. The numbers
    are the same as the autograd path's, bit for bit.
    """
    q, k, v = _compute_dtype(query, key, value)
    scores = torch.matmul(q * (1.0 / math.sqrt(q.shape[-1])), k.transpose(-2, -1))  # (..., L, S)
    if score_bias is not None:
        scores.add_(score_bias.to(scores.dtype))  # (..., L, S)
    if mask is not None:
        has_key = mask.any(dim=-1, keepdim=True)  # (..., L, 1)
        torch.where(mask, scores, _masked_score(has_key, scores), out=scores)
    weights = torch.softmax(scores, dim=-1, out=scores)  # (..., L, S), reuses the score memory
    if mask is not None:
        weights.masked_fill_(has_key.logical_not(), 0.0)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p, training=True, inplace=True)
    output = torch.matmul(weights, v)  # (..., L, Dv)
    return output.to(query.dtype), weights.to(query.dtype)


def _check_arguments(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, dropout_p: float, score_bias: Tensor | None
) -> None:
    """Validate the arguments of :func:`scaled_dot_product_attention` (see its Raises)."""
    check_tensor("query", query, "float", "(..., L, Dh)")
    check_tensor("key", key, "float", "(..., S, Dh)", dtype=query.dtype, device=query.device, of="query",
                 Dh=query.shape[-1])
    check_tensor("value", value, "float", "(..., S, Dv)", dtype=query.dtype, device=query.device, of="query",
                 S=key.shape[-2])
    if query.shape[-1] == 0:
        raise ValueError(f"query: expected a head dimension Dh >= 1 (scale 1/sqrt(Dh)), got {tuple(query.shape)}")
    try:
        batch = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    except RuntimeError as err:
        raise ValueError(
            f"query, key, value: expected leading dimensions that broadcast, got {tuple(query.shape)}, "
            f"{tuple(key.shape)}, {tuple(value.shape)}"
        ) from err
    check_probability("dropout_p", dropout_p)
    scores_shape = torch.Size((*batch, query.shape[-2], key.shape[-2]))
    for name, extra, kind in (("mask", mask, "bool"), ("score_bias", score_bias, "float")):
        if extra is None:
            continue
        check_tensor(name, extra, kind, device=query.device, of="query")
        try:
            fits = torch.broadcast_shapes(extra.shape, scores_shape) == scores_shape
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(
                f"{name}: expected a shape broadcastable to the scores (..., L, S)={tuple(scores_shape)}, "
                f"got {tuple(extra.shape)}"
            )
    if score_bias is not None and values_are_cheap(score_bias) and not bool(torch.isfinite(score_bias).all()):
        raise ValueError(  # a row of -inf would give NaN weights; the bool mask handles such rows (zeros)
            "score_bias: expected finite values (say which keys may not be attended with the bool mask, "
            f"True = may attend), got {'NaN' if bool(score_bias.isnan().any()) else 'inf'} in it"
        )
