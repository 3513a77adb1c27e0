"""Turning a trained model into output sequences: greedy search, beam search, sampling, the KV cache.

All of the package's generation lives here; its argument checks are in ``tformer._checks``. Introduced in
``10_encoder_decoder`` (greedy, beam, KV cache) and ``12_three_families`` (sampling, :func:`generate` and
:class:`CachedGenerationMixin` for the causal language models). How long a model's input may grow is its
``position_limit`` (``None``: no end), which the searches and :func:`generate` read. The
encoder-decoder functions work with any model that has ``encode(src) -> memory``,
``decode(tgt_in, memory, src_padding, cache=...) -> logits``, ``new_cache()`` and ``pad_id``, such as
:class:`tformer.models.Transformer`. They run under ``torch.no_grad()`` and leave train/eval mode to the
caller: call ``model.eval()`` first so dropout is off.

Outputs hold the generated tokens only (no BOS): each row is ``y1 … yn EOS`` followed by ``pad_id``; a row that
reaches ``max_len`` without EOS has no EOS.

Dimension letters: B batch, K beams, S source length, L generated length, V target vocabulary.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import torch
from torch import Tensor

from tformer._checks import (
    check_decode_args,
    check_eos_in_vocabulary,
    check_flags,
    check_int,
    check_length_penalty,
    check_sampling,
    check_stop_and_banned,
    check_tensor,
    check_tokens,
    values_are_cheap,
)
from tformer.attention import KVCache

__all__ = [
    "CachedGenerationMixin",
    "KVCache",
    "beam_search",
    "generate",
    "greedy_decode",
    "reorder_cache",
    "sample_next_token",
]


def reorder_cache(cache: Any, index: Tensor) -> None:
    """Call :meth:`KVCache.reorder` on every cache in a (possibly nested) list/tuple, e.g. ``model.new_cache()``.

    Shape: ``index (B_new,)`` integer positions into the current batch. Raises: TypeError (from iteration) if
    ``cache`` is neither a :class:`KVCache` nor an iterable of them.
    """
    if isinstance(cache, KVCache):
        cache.reorder(index)
    else:
        for item in cache:
            reorder_cache(item, index)


@torch.no_grad()
def greedy_decode(
    model: Any, src: Tensor, max_len: int, bos_id: int, eos_id: int, *, use_cache: bool = True
) -> Tensor:
    """Greedy search: at each step append the most likely next token, until every row has produced EOS.

    The source is encoded once. With ``use_cache`` the decoder is fed only the newest token and reuses its
    cached keys/values (self-attention grows, the memory's projections are computed once); without, the whole
    prefix is recomputed at every step. Both give the same tokens.

    Args:
        model: an encoder-decoder model (see the module docstring).
        src: ``(B, S)`` source ids, padded with ``model.pad_id``.
        max_len: the most tokens to generate per row (EOS included).
        bos_id, eos_id: start and end ids of the target vocabulary.
        use_cache: reuse keys/values between steps.

    ``model.pad_id`` is never generated as a token (its logit is ignored), so it only ever appears as the
    padding after EOS. When the model's positions end (learned or sinusoidal: ``model.max_len``), at most
    ``model.max_len`` tokens are generated (the decoder cannot read a longer prefix), even if ``max_len`` is
    larger; with RoPE or ALiBi there is no such cap (``model.position_limit`` is ``None``).

    Shape:
        ``src (B, S) -> (B, L)`` int64.

    Returns:
        ``(B, L)`` with ``L ≤ max_len``: each row stops at its own EOS and is padded with ``model.pad_id``;
        decoding ends as soon as every row is done.

    Raises:
        ValueError/TypeError: on a malformed ``src``, ``max_len``, ``bos_id`` or ``eos_id``, an ``eos_id``
            outside the target vocabulary, or ``bos_id``/``eos_id`` equal to ``model.pad_id``.
    """
    check_flags(use_cache=use_cache)
    max_len = check_decode_args(model, src, max_len, bos_id, eos_id)
    memory = model.encode(src)  # (B, S, D)
    src_padding = src != model.pad_id  # (B, S)
    B = src.shape[0]
    ys = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1): [BOS]
    done = torch.zeros(B, dtype=torch.bool, device=src.device)  # (B,)
    cache = model.new_cache() if use_cache else None
    for _ in range(max_len):
        step_input = ys[:, -1:] if use_cache else ys  # (B, 1) or (B, t)
        logits = model.decode(step_input, memory, src_padding, cache=cache)[:, -1].clone()  # (B, V)
        check_eos_in_vocabulary(eos_id, logits.shape[-1])
        logits[:, model.pad_id] = float("-inf")  # PAD is padding, never a generated token
        next_token = logits.argmax(dim=-1).masked_fill(done, model.pad_id)  # (B,)
        ys = torch.cat([ys, next_token[:, None]], dim=1)  # (B, t + 1)
        done |= next_token == eos_id
        if bool(done.all()):
            break
    return ys[:, 1:]  # drop BOS


def _length_penalty(lengths: Tensor, alpha: float) -> Tensor:
    """GNMT length penalty ((5 + |Y|) / 6)^α (Wu et al. 2016, §7, Eq. 14); α = 0 means no normalisation."""
    return ((5.0 + lengths) / 6.0) ** alpha


@torch.no_grad()
def beam_search(
    model: Any,
    src: Tensor,
    beam_size: int,
    max_len: int,
    bos_id: int,
    eos_id: int,
    *,
    length_penalty: float = 0.6,
) -> Tensor:
    """Beam search: follow the ``beam_size`` most probable prefixes per source, return the best finished one.

    Finished hypotheses live in their own store, apart from the K live beams, so a hypothesis that has emitted
    EOS is never pushed out by live beams that score better so far (as in the searches of GNMT and fairseq).
    At every step each live beam is extended by every token and the best P = 2K − 1 of the K·V candidates (by
    summed log probability) form the pool:

    - a candidate ending in EOS is finished; it is scored score / ((5 + length) / 6)^α (Wu et al. 2016, §7,
      Eq. 14; length counts EOS) and kept if it beats the row's best finished hypothesis so far;
    - the best K candidates of the pool that do not end in EOS are the next live beams.

    P = 2K − 1 is the smallest pool that, for K ≥ 2, also catches a finished hypothesis ranked just behind the
    K best candidates (rank K + 1, where a search that only looked at the best K would drop it), while
    ``beam_size=1`` stays exactly greedy search (a pool of one: the search ends at greedy's EOS).

    A row stops when no live beam can beat its best finished hypothesis: log probabilities are ≤ 0 and the
    penalty grows with length, so a live beam with score s can at best reach s / ((5 + max_len) / 6)^α.
    Stopping there never changes the answer. The search ends when every row has stopped, or after
    ``max_len`` tokens.

    Args:
        model, src, max_len, bos_id, eos_id: as :func:`greedy_decode`.
        beam_size: K ≥ 1. Beams without a finite-score candidate (K larger than the live candidates) keep
            score -inf and are never returned.
        length_penalty: α ≥ 0 above; ``0`` ranks by raw log probability.

    Returns:
        ``(B, L)`` with ``L ≤ max_len``: per row the best finished hypothesis, EOS then ``model.pad_id``
        padding. A row returns an unfinished hypothesis (``max_len`` tokens, no EOS: the live beam with the
        best score) only when the search finished none.

    As in :func:`greedy_decode`, ``model.pad_id`` is never generated and ``max_len`` is capped at
    ``model.max_len`` (not with RoPE). Source: the beam search of Sutskever et al. 2014, §3.2, as used by Vaswani et al. 2017,
    §6.1 (beam 4, α = 0.6).

    Shape:
        ``src (B, S) -> (B, L)`` int64; internally ``B·K`` rows.

    Raises:
        TypeError / ValueError: if ``beam_size`` is not an int >= 1, ``length_penalty`` is not a number >= 0,
            or as :func:`greedy_decode`.
    """
    max_len = check_decode_args(model, src, max_len, bos_id, eos_id)
    K = check_int("beam_size", beam_size, 1)
    alpha = check_length_penalty(length_penalty)
    B, device, pad_id = src.shape[0], src.device, model.pad_id
    memory = model.encode(src).repeat_interleave(K, dim=0)  # (B·K, S, D): beam k of row b at b·K + k
    src_padding = (src != pad_id).repeat_interleave(K, dim=0)  # (B·K, S)
    cache = model.new_cache()
    dtype = torch.promote_types(memory.dtype, torch.float32)  # score in at least float32
    row_start = torch.arange(B, device=device)[:, None] * K  # (B, 1): flat index of each row's first beam
    ys = torch.full((B * K, 1), bos_id, dtype=torch.long, device=device)  # (B·K, 1)
    scores = torch.zeros(B, K, dtype=dtype, device=device)  # (B, K); all but one beam start at -inf
    scores[:, 1:] = float("-inf")
    scores = scores.view(-1)  # (B·K,)
    # the finished store: per row, the best finished hypothesis so far and its normalised score
    best_score = torch.full((B,), float("-inf"), dtype=dtype, device=device)  # (B,)
    best_tokens = torch.full((B, max_len), pad_id, dtype=torch.long, device=device)  # (B, max_len)
    done = torch.zeros(B, dtype=torch.bool, device=device)  # (B,)
    best_reachable = _length_penalty(torch.tensor(float(max_len), dtype=dtype), alpha)  # penalty at max_len
    for step in range(1, max_len + 1):
        logits = model.decode(ys[:, -1:], memory, src_padding, cache=cache)[:, -1]  # (B·K, V)
        logits = logits.to(dtype)  # (B·K, V), a copy when dtype differs
        V = logits.shape[-1]
        check_eos_in_vocabulary(eos_id, V)
        logits = logits.index_fill(-1, torch.tensor([pad_id], device=device), float("-inf"))  # PAD: never a token
        log_probs = torch.log_softmax(logits, dim=-1)  # (B·K, V), over the real tokens
        candidates = (scores[:, None] + log_probs).view(B, K * V)  # (B, K·V)
        pool_scores, pool_index = candidates.topk(min(2 * K - 1, K * V), dim=-1)  # (B, P) each
        ends = (pool_index % V == eos_id) & pool_scores.isfinite()  # (B, P): finished candidates

        # finished candidates go to the store: keep the row's best, by normalised score
        penalty = _length_penalty(torch.tensor(float(step), dtype=dtype), alpha)
        finished = torch.where(ends, pool_scores / penalty, float("-inf"))  # (B, P)
        step_best, step_arg = finished.max(dim=1)  # (B,) each
        better = (step_best > best_score) & ~done  # (B,)
        if bool(better.any()):
            parent = row_start[:, 0] + pool_index.gather(1, step_arg[:, None])[:, 0] // V  # (B,) its beam
            found = torch.cat([ys[parent, 1:], torch.full((B, 1), eos_id, device=device)], dim=1)  # (B, step)
            best_tokens[better, :step] = found[better]
            best_score = torch.where(better, step_best, best_score)

        # the best K candidates that do not end in EOS live on
        live_scores, live_pos = pool_scores.masked_fill(ends, float("-inf")).topk(K, dim=-1)  # (B, K) each
        live_index = pool_index.gather(1, live_pos)  # (B, K) into the K·V candidates
        rows = (row_start + live_index // V).view(-1)  # (B·K,) which beam each survivor extends
        ys = torch.cat([ys[rows], (live_index % V).view(-1, 1)], dim=1)  # (B·K, step + 1)
        scores = live_scores.view(-1)  # (B·K,)
        reorder_cache(cache, rows)

        # a row is done when even its best live beam, at the most favourable length, cannot beat its best
        done |= best_score >= live_scores[:, 0] / best_reachable  # live_scores is sorted: [:, 0] is the best
        if bool(done.all()):
            break
    unfinished = ~best_score.isfinite()  # (B,) rows that finished no hypothesis: return their best live beam
    if bool(unfinished.any()):
        live = ys[row_start[:, 0], 1:]  # (B, step): beam 0 is the best (sorted by topk)
        best_tokens[unfinished, : live.shape[1]] = live[unfinished]
    keep = int((best_tokens != pad_id).any(dim=0).nonzero().max()) + 1 if bool((best_tokens != pad_id).any()) else 1
    return best_tokens[:, :keep]


def sample_next_token(
    logits: Tensor,
    temperature: float = 0.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
    *,
    top_p: float | None = None,
) -> Tensor:
    """Choose one token per row from next-token logits.

    ``temperature == 0``: argmax (greedy). Otherwise sample from softmax(logits / temperature): below 1 sharpens,
    above 1 flattens the distribution. ``top_k`` keeps only the k largest logits before sampling (Fan et al.
    2018). ``top_p`` (nucleus sampling, Holtzman et al. 2020, §3.1) then keeps the smallest set of most likely
    tokens whose probabilities sum to at least ``top_p``: tokens are taken in order of probability until the
    sum reaches it, so the token that crosses the threshold is kept; ``top_p = 1`` (or ``None``) changes
    nothing. As with ``top_k``, every token tied with the last one kept is kept too (so the nucleus does not
    depend on how a sort orders equal logits). The order (temperature, then top-k, then top-p) is the one
    Hugging Face's samplers apply.
    ``generator`` makes sampling reproducible.

    Shape:
        ``logits (B, V) -> (B,)`` int64.

    With ties at the k-th largest logit, every tied token is kept (so more than k may remain).

    A temperature so small that ``logits / temperature`` overflows (e.g. ``1e-40``) leaves no distribution to
    sample from; such a row takes its argmax, the limit of sampling as the temperature goes to 0. Rows that
    do not overflow are sampled exactly as before (no host-device sync is added).

    Raises:
        TypeError: if ``logits`` is not a floating-point tensor, ``temperature`` or ``top_p`` not a number,
            ``top_k`` not an int, or ``generator`` not a ``torch.Generator``.
        ValueError: if ``logits`` is not 2-D or has no column (V = 0), holds a NaN or a row without a finite
            value (checked on the CPU), ``temperature`` is negative, infinite or NaN, ``top_k < 1``, or
            ``top_p`` is outside (0, 1].
    """
    check_tensor("logits", logits, "float", "(B, V)")
    if logits.shape[-1] == 0:
        raise ValueError("logits: expected at least one token to choose from (V >= 1), got V = 0")
    check_sampling(temperature, top_k, top_p, generator)
    return _sample(logits, temperature, top_k, generator, top_p)


def _sample(
    logits: Tensor, temperature: float, top_k: int | None, generator: torch.Generator | None, top_p: float | None
) -> Tensor:
    """:func:`sample_next_token` without its argument checks: :func:`generate` checks them once, not every token.
    The logits' values are checked on every call (where reading them is cheap): they come from a model."""
    if values_are_cheap(logits):  # a NaN would be chosen by argmax; a row of -inf has no distribution to sample
        nans, empty_rows = int(logits.isnan().sum()), int((~torch.isfinite(logits).any(dim=-1)).sum())
        if nans or empty_rows:
            raise ValueError(f"logits: expected no NaN and at least one finite logit per row, got {nans} NaN and "
                             f"{empty_rows} rows without a finite logit (a model that diverged?)")  # fmt: skip
    if temperature == 0:
        return logits.argmax(dim=-1)
    scaled = logits.float() / temperature  # (B, V)
    if top_k is not None and top_k < scaled.shape[-1]:
        kth = scaled.topk(top_k, dim=-1).values[:, -1:]  # (B, 1): the k-th largest logit
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if top_p is not None and top_p < 1:
        scaled = _nucleus(scaled, top_p)
    probs = torch.softmax(scaled, dim=-1)  # (B, V); NaN in a row where the division overflowed
    overflowed = probs.isnan().any(dim=-1, keepdim=True)  # (B, 1)
    greedy = torch.nn.functional.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(probs.dtype)  # (B, V)
    probs = torch.where(overflowed, greedy, probs)  # (B, V)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # (B,)


def _nucleus(scaled: Tensor, top_p: float) -> Tensor:
    """Set to -inf every logit outside the nucleus: the most likely tokens until their probability reaches top_p."""
    ordered = scaled.sort(dim=-1, descending=True).values  # (B, V), most likely first
    probs = torch.softmax(ordered, dim=-1)  # (B, V), most likely first
    before = probs.cumsum(dim=-1) - probs  # (B, V): the mass of the tokens ranked above each one
    drop_sorted = before >= top_p  # the threshold was reached before this token: the crossing token stays
    lowest_kept = ordered.masked_fill(drop_sorted, float("inf")).amin(dim=-1, keepdim=True)  # (B, 1)
    return scaled.masked_fill(scaled < lowest_kept, float("-inf"))  # a token tied with the last kept one stays


@torch.no_grad()
def generate(
    model: Any,
    prompt: Tensor,
    max_new_tokens: int,
    *,
    use_cache: bool = True,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    stop_id: int | None = None,
    banned_ids: Collection[int] = (),
) -> Tensor:
    """Extend ``prompt`` by up to ``max_new_tokens`` tokens of a causal language model, one at a time.

    ``model`` provides ``vocab_size``, ``pad_id`` (an id never generated, or ``None``), ``position_limit`` (the
    most tokens its positions take, or ``None`` when they have no end), ``new_cache()``, and
    ``model(tokens (B, L), *, cache=None) -> logits (B, L, V)`` that continues after what the cache holds:
    :class:`tformer.models.DecoderOnlyTransformer` and :class:`tformer.variants.modern_block.ModernDecoderLM`.

    ``temperature=0`` is greedy (argmax); otherwise sample from softmax(logits / temperature), optionally
    restricted to the ``top_k`` most likely tokens and to the nucleus of probability ``top_p``
    (:func:`sample_next_token`). With ``use_cache`` each step
    feeds only the newest token and reuses the cached keys/values; the result is the same as recomputing
    (test_models proves it). Call ``model.eval()`` first so dropout is off.

    Past ``position_limit`` tokens (``max_len`` for learned or sinusoidal positions) the model sees only the
    last ``position_limit`` tokens (as nanoGPT crops to its block size); every token then sits at a new
    position, so the cache is dropped and each step recomputes the window. A model whose positions have no end
    (RoPE, ALiBi) keeps the whole context and the cache.

    ``pad_id`` (when not ``None``) is padding, never a generated token (its logit is ignored, as in
    :func:`greedy_decode`), and a prompt may not contain it: the cached steps could not hide a padded key that
    an uncached forward hides. ``banned_ids`` are never generated either (chapter 17's poet bans the special tokens,
    which were never training targets).

    ``stop_id`` ends a row: once a row has written it, the row writes it again at every later step, and
    generation stops as soon as every row has written it (a poem's newline, a sentence's ``<eos>``).

    Shape:
        ``prompt (B, P) -> (B, P + T)``, T = ``max_new_tokens``, or fewer when every row wrote ``stop_id``.

    Raises:
        ValueError: if ``max_new_tokens < 0``, the prompt contains ``pad_id``, the model's logits hold a NaN
            or a row without a finite value (checked on the CPU), ``stop_id`` or a banned id is outside ``[0, V)``,
            ``stop_id`` is banned or every id is, or as the model's ``forward``.
        TypeError: if ``max_new_tokens`` or ``stop_id`` is not an int, ``prompt`` not an integer tensor,
            ``banned_ids`` not a collection of ints, or ``generator`` not a ``torch.Generator``.
    """
    check_flags(use_cache=use_cache)
    max_new_tokens = check_int("max_new_tokens", max_new_tokens, 0)
    check_sampling(temperature, top_k, top_p, generator)
    check_tokens("prompt", prompt, model.vocab_size, None)
    pad_id = model.pad_id
    banned = check_stop_and_banned(stop_id, banned_ids, model.vocab_size, pad_id)  # padding included: never a token
    if pad_id is not None and bool((prompt == pad_id).any()):
        raise ValueError(f"prompt: expected no padding (pad_id={pad_id}), got a prompt that contains it")
    stopped = torch.zeros(prompt.shape[0], dtype=torch.bool, device=prompt.device)  # (B,): wrote stop_id
    window = model.position_limit
    tokens, step_input = prompt, prompt
    cache = model.new_cache() if use_cache else None
    for _ in range(max_new_tokens):
        if cache is not None and (window is None or len(cache[0]) + step_input.shape[1] <= window):
            logits = model(step_input, cache=cache)[:, -1]  # (B, V)
        else:  # no cache, or the window slides: the last `window` tokens at positions 0 .. window-1
            cache = None
            logits = model(tokens if window is None else tokens[:, -window:])[:, -1]  # (B, V)
        if banned:
            logits[:, banned] = float("-inf")  # never a token
        next_token = _sample(logits, temperature, top_k, generator, top_p)  # (B,), checked above
        if stop_id is not None:
            next_token = next_token.masked_fill(stopped, stop_id)  # a row that ended stays ended
            stopped |= next_token == stop_id
        tokens = torch.cat([tokens, next_token[:, None]], dim=1)  # (B, P + t + 1)
        step_input = next_token[:, None]
        if stop_id is not None and bool(stopped.all()):
            break
    return tokens


class CachedGenerationMixin:
    """``model.generate(...)``: :func:`generate` as a method of the causal language models.

    Mixed into :class:`tformer.models.DecoderOnlyTransformer` and
    :class:`tformer.variants.modern_block.ModernDecoderLM`; the model provides what :func:`generate` reads.

    Shape:
        ``generate(prompt (B, P), max_new_tokens) -> (B, P + max_new_tokens)``.
    """

    def generate(self, prompt: Tensor, max_new_tokens: int, **options: Any) -> Tensor:
        """Extend ``prompt`` by up to ``max_new_tokens`` tokens: :func:`generate` with this model. ``options`` are its
        keywords (``use_cache``, ``temperature``, ``top_k``, ``top_p``, ``generator``, ``stop_id``, ``banned_ids``);
        shapes and errors are its own."""
        return generate(self, prompt, max_new_tokens, **options)
