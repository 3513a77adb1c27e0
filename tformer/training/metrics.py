"""Scores for sequence outputs: exact match, token accuracy, corpus BLEU, and accuracy by length bucket.

Introduced in ``02_seq2seq_bottleneck`` and used by every chapter that trains a translator. BLEU is computed by
``sacrebleu`` (Post 2018, "A Call for Clarity in Reporting BLEU Scores"), never by hand, with its Chinese
tokeniser (``tokenize="zh"``: each Chinese character is a token), so the figure is comparable across runs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import sacrebleu
import torch
from torch import Tensor

from tformer._checks import check_bool, check_choice, check_ids, check_int, check_number, check_tensor, is_int
from tformer.data.text import BOS_ID, EOS_ID, PAD_ID, Vocab, bucket_batches, pad_sequences

__all__ = [
    "DEFAULT_LENGTH_EDGES",
    "LengthBucket",
    "TranslationReport",
    "accuracy_by_length",
    "accuracy_over",
    "bigram_nats_per_token",
    "corpus_bleu",
    "evaluate_translation",
    "exact_match",
    "length_bucket_label",
    "lm_nats_per_token",
    "token_accuracy",
    "translate",
]

DEFAULT_LENGTH_EDGES: tuple[int, ...] = (10, 20, 30)
"""Bucket upper edges in words: 1-10, 11-20, 21-30, 31+ (the ">20 words" figure is the last two buckets)."""


def _as_text(item: str | Sequence[str]) -> str:
    return item if isinstance(item, str) else " ".join(item)


def _check_pair(predictions: Sequence, references: Sequence, names: tuple[str, str] = ("predictions", "references"),
                what: str = "sentences") -> None:
    for name, items in zip(names, (predictions, references), strict=True):
        if isinstance(items, (str, bytes)):  # a str is a sequence too: it would be scored character by character
            raise TypeError(f"{name}: expected a sequence of {what}, got {type(items).__name__} {items!r:.40}")
    if len(predictions) != len(references):
        raise ValueError(
            f"{names[0]} and {names[1]}: expected the same count, got {len(predictions)} and {len(references)}"
        )
    if len(predictions) == 0:
        raise ValueError(f"{names[0]}: expected at least one sequence, got none")


def exact_match(
    predictions: Sequence[str | Sequence[str]], references: Sequence[str | Sequence[str]]
) -> float:
    """Fraction of predictions identical to their reference (token lists or space-joined strings).

    Returns:
        A float in ``[0, 1]``.

    Raises:
        TypeError: if ``predictions`` or ``references`` is a single str (not a sequence of sentences).
        ValueError: if the counts differ or are zero.
    """
    _check_pair(predictions, references)
    hits = sum(
        _as_text(p).split() == _as_text(r).split() for p, r in zip(predictions, references, strict=True)
    )
    return hits / len(predictions)


def token_accuracy(predictions: Tensor, targets: Tensor, *, pad_id: int = PAD_ID) -> float:
    """Fraction of non-padding target positions where the predicted id equals the target id.

    Accepts ids ``(B, L)`` or logits ``(B, L, V)`` (argmax taken over V). Positions where ``targets == pad_id``
    are ignored.

    Shape:
        - predictions: ``(B, L)`` ids or ``(B, L, V)`` logits
        - targets: ``(B, L)`` ids

    Raises:
        ValueError: if the shapes disagree or every target is padding.
    """
    check_tensor("targets", targets, "int", "(B, L)")
    check_tensor("predictions", predictions)
    if predictions.dim() == targets.dim() + 1:
        predictions = predictions.argmax(dim=-1)  # (B, L)
    if predictions.shape != targets.shape:
        raise ValueError(
            f"predictions: expected (B, L) = {tuple(targets.shape)} or (B, L, V), got {tuple(predictions.shape)}"
        )
    keep = targets != pad_id
    if not bool(keep.any()):
        raise ValueError(f"targets: expected at least one position that is not pad_id={pad_id}, got none")
    return float((predictions.eq(targets) & keep).sum()) / float(keep.sum())


def corpus_bleu(
    hypotheses: Sequence[str | Sequence[str]],
    references: Sequence[str | Sequence[str]],
    *,
    tokenize: str = "zh",
) -> float:
    """Corpus BLEU (0-100) through ``sacrebleu.corpus_bleu`` with one reference per hypothesis.

    Papineni et al. 2002 (BLEU) with sacrebleu's defaults: 4-grams, the brevity penalty, and exponential smoothing
    (``smooth_method='exp'``), so a sentence with no matching 4-gram scores above 0 rather than exactly 0.
    ``tokenize="zh"`` splits Chinese into characters, so word spacing does not matter.

    Raises:
        TypeError: if ``hypotheses`` or ``references`` is a single str (not a sequence of sentences).
        ValueError: if the counts differ or are zero, or ``tokenize`` is not one of sacrebleu's tokenisers.
    """
    _check_pair(hypotheses, references, ("hypotheses", "references"))
    check_choice("tokenize", tokenize, sorted(sacrebleu.BLEU.TOKENIZERS))
    hyps = [_as_text(h) for h in hypotheses]
    refs = [_as_text(r) for r in references]
    return float(sacrebleu.corpus_bleu(hyps, [refs], tokenize=tokenize).score)


def length_bucket_label(length: int, edges: Sequence[int] = DEFAULT_LENGTH_EDGES) -> str:
    """The bucket a length falls in, e.g. ``"11-20"`` or ``"31+"`` for the default edges (10, 20, 30).

    Length 0 (an empty source: junk rows of real data) has its own bucket, ``"0"``.

    Raises:
        ValueError: if ``length < 0`` or ``edges`` is not strictly increasing and positive.
    """
    length = check_int("length", length, 0)
    _check_edges(edges)
    if length == 0:
        return "0"
    low = 1
    for edge in edges:
        if length <= edge:
            return f"{low}-{edge}"
        low = edge + 1
    return f"{low}+"


def _check_edges(edges: Sequence[int]) -> None:
    if isinstance(edges, (str, bytes)) or not isinstance(edges, Sequence):
        raise TypeError(f"edges: expected a sequence of ints, got {type(edges).__name__}")
    if (not edges or any(not is_int(e) for e in edges)
            or any(b <= a for a, b in itertools.pairwise(edges)) or edges[0] < 1):  # fmt: skip
        raise ValueError(f"edges: expected strictly increasing positive integers, got {tuple(edges)}")


@dataclass(frozen=True)
class LengthBucket:
    """One row of an accuracy-by-length table: lengths ``low..high`` (``high=None``: no upper edge)."""

    label: str
    low: int
    high: int | None
    count: int
    accuracy: float  # NaN when count == 0


def accuracy_by_length(
    lengths: Sequence[int], correct: Sequence[bool] | Tensor, edges: Sequence[int] = DEFAULT_LENGTH_EDGES
) -> list[LengthBucket]:
    """Accuracy per length bucket, for plots of accuracy against sentence length.

    Args:
        lengths: the length of each example (e.g. source words).
        correct: whether each example was right (e.g. exact match).
        edges: bucket upper edges; the last bucket is open-ended.

    Returns:
        One :class:`LengthBucket` per bucket, in order, empty buckets included (accuracy NaN); a first bucket
        ``"0"`` (``low = high = 0``) is added only when some length is 0 (empty examples are counted apart).

    Raises:
        TypeError: if ``lengths`` or ``correct`` is a str, or ``edges`` is not a sequence.
        ValueError: if the counts differ or are zero, or a length or the edges are invalid (edges must be
            strictly increasing positive ints: ``[5.5]`` is refused).
    """
    _check_pair(lengths, correct, ("lengths", "correct"), "values")
    _check_edges(edges)
    correct = correct.tolist() if isinstance(correct, Tensor) else list(correct)
    _check_pair(lengths, correct, ("lengths", "correct"), "values")
    labels = [length_bucket_label(n, edges) for n in lengths]
    lows = [1, *(e + 1 for e in edges)]
    highs: list[int | None] = [*edges, None]
    if "0" in labels:
        lows, highs = [0, *lows], [0, *highs]
    rows = []
    for low, high in zip(lows, highs, strict=True):
        label = "0" if high == 0 else f"{low}-{high}" if high is not None else f"{low}+"
        hits = [c for lab, c in zip(labels, correct, strict=True) if lab == label]
        acc = sum(bool(c) for c in hits) / len(hits) if hits else float("nan")
        rows.append(LengthBucket(label, low, high, len(hits), acc))
    return rows


def accuracy_over(lengths: Sequence[int], correct: Sequence[bool] | Tensor, min_length: int) -> float:
    """Accuracy on the examples longer than ``min_length`` (e.g. 20 words). NaN when there are none."""
    _check_pair(lengths, correct, ("lengths", "correct"), "values")
    correct = correct.tolist() if isinstance(correct, Tensor) else list(correct)
    hits = [bool(c) for n, c in zip(lengths, correct, strict=True) if n > min_length]
    return sum(hits) / len(hits) if hits else float("nan")


# ----------------------------------------------------------------------------------------------- scoring models
@dataclass
class TranslationReport:
    """Greedy translations of a test set and their scores (from :func:`evaluate_translation`).

    Attributes:
        sources, references, hypotheses: space-separated tokens, in the order of the input pairs.
        correct: exact match per sentence.
        exact_match: fraction of sentences translated exactly.
        bleu: corpus BLEU (0-100, sacrebleu, ``tokenize="zh"``).
        buckets: exact match by source length in words (:func:`accuracy_by_length`).
        unknown_words: source words not in the source vocabulary, each fed to the model as ``<unk>``.
        truncated_sources: sources longer than the model's positions reach (learned or sinusoidal positions),
            cut to their first ``model.max_len`` ids before translating (0 for RoPE, which has no limit).
    """

    sources: list[str]
    references: list[str]
    hypotheses: list[str]
    correct: list[bool]
    exact_match: float
    bleu: float
    buckets: list[LengthBucket]
    unknown_words: int
    truncated_sources: int = 0

    def accuracy_over(self, min_words: int) -> float:
        """Exact match on sources longer than ``min_words`` words (NaN if none)."""
        return accuracy_over([len(s.split()) for s in self.sources], self.correct, min_words)


def _check_vocab_size(model: object, attr: str, vocab: Vocab, name: str) -> None:
    size = getattr(model, attr, None)
    if size is not None and size != len(vocab):
        raise ValueError(
            f"{name}: expected the model's {attr}={size} tokens (mismatched vocabulary?), got {len(vocab)}"
        )


@torch.no_grad()
def translate(
    model: torch.nn.Module,
    sentences: Sequence[str],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    *,
    batch_size: int = 256,
    max_len: int | None = None,
    strict: bool = False,
    src_eos: bool = True,
) -> list[str]:
    """Greedy-decode English sentences (space-separated words) into target sentences.

    ``model`` is any ``nn.Module`` with a method
    ``greedy_decode(src (B, S), max_len, bos_id, eos_id) -> (B, ≤ max_len)``, such as
    :class:`tformer.models.Transformer` or :class:`tformer.baselines.seq2seq_rnn.Seq2SeqRNN`, so both families are scored
    by the same code (it is put in eval mode for the call and restored after). Sentences are batched by
    length; the model's device is used. ``max_len`` (target tokens, EOS included) defaults to
    ``2 · source words + 10``, capped by the model's ``max_len``. ``src_eos`` appends ``EOS_ID`` to
    each source, as :class:`tformer.data.text.PairBatches` does by default: use the choice the model was trained with.
    A source with no words (``""``, spaces) translates to ``""``, not refused and not decoded.
    A source word the vocabulary lacks is fed as ``<unk>`` (``UNK_ID``), so real text is scored, not refused;
    ``strict=True`` raises on it instead. A source longer than the model's positions reach (learned or
    sinusoidal: ``model.max_len`` ids, EOS included) is cut to its first words (EOS kept) rather than refused;
    :func:`evaluate_translation` counts such sources. RoPE models read sources of any length. ``max_len``
    is capped only for models whose positions end.

    Raises:
        TypeError: if ``model`` has no ``greedy_decode`` method, ``sentences`` is a ``str`` (pass a list) or not a
            sequence (a tensor, ``None``), a sentence is not a ``str`` (the message gives its index), ``strict``
            or ``src_eos`` is not a bool, or ``batch_size``/``max_len`` is not an int.
        ValueError: on an unknown source word (``strict``), a vocabulary whose size differs from the model's, a
            decoded id outside ``tgt_vocab``, or ``batch_size``/``max_len`` below 1.
    """
    return _translate(model, sentences, src_vocab, tgt_vocab, batch_size=batch_size, max_len=max_len,
                      strict=strict, src_eos=src_eos)[0]  # fmt: skip


def _translate(
    model: torch.nn.Module,
    sentences: Sequence[str],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    *,
    batch_size: int,
    max_len: int | None,
    strict: bool,
    src_eos: bool,
) -> tuple[list[str], int]:
    """:func:`translate`, also returning how many sources were truncated to the model's length limit."""
    if isinstance(sentences, str):
        raise TypeError("sentences: expected a list of sentences, got a str (wrap one sentence in a list)")
    if not isinstance(sentences, Sequence):  # a tensor of ids, None, a generator
        raise TypeError(f"sentences: expected a list of str sentences, got {type(sentences).__name__}")
    for i, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise TypeError(f"sentences[{i}]: expected a str (space-separated words), got {type(sentence).__name__}")
    check_bool("strict", strict)
    check_bool("src_eos", src_eos)
    batch_size = check_int("batch_size", batch_size, 1)
    if max_len is not None:
        max_len = check_int("max_len", max_len, 1)
    if not callable(getattr(model, "greedy_decode", None)):
        raise TypeError(f"model: expected a translator with a greedy_decode method, got {type(model).__name__}")
    _check_vocab_size(model, "src_vocab_size", src_vocab, "src_vocab")
    _check_vocab_size(model, "tgt_vocab_size", tgt_vocab, "tgt_vocab")
    if len(sentences) == 0:
        return [], 0
    device = next(model.parameters()).device
    model_max = getattr(model, "position_limit", None)  # None: RoPE, or an RNN: no limit
    encoded = [src_vocab.encode(s.split(), strict=strict, add_eos=src_eos) for s in sentences]
    truncated = 0
    if model_max is not None:
        for i, ids in enumerate(encoded):
            if len(ids) > model_max:  # keep the first words, and the source's EOS when it has one
                encoded[i] = [*ids[: model_max - 1], EOS_ID] if src_eos else ids[:model_max]
                truncated += 1
    was_training = model.training
    model.eval()
    out: list[str] = [""] * len(sentences)
    # A source with no words has nothing to translate: "" (fed only its EOS, a model would invent a sentence).
    nonempty = [i for i, sentence in enumerate(sentences) if sentence.split()]
    try:
        for batch in bucket_batches([len(encoded[i]) for i in nonempty] or [0], batch_size, shuffle=False):
            idx = [nonempty[j] for j in batch if nonempty]
            if not idx:
                break
            src = pad_sequences([encoded[i] for i in idx]).to(device)  # (B, S)
            limit = max_len if max_len is not None else 2 * src.shape[1] + 10
            if model_max is not None:
                limit = min(limit, model_max)
            ys = model.greedy_decode(src, limit, BOS_ID, EOS_ID)  # (B, ≤ limit)
            for row, i in zip(ys.cpu(), idx, strict=True):
                out[i] = " ".join(tgt_vocab.decode(row))
    finally:
        model.train(was_training)
    return out, truncated


def evaluate_translation(
    model: torch.nn.Module,
    pairs: Sequence[tuple[str, str]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    *,
    batch_size: int = 256,
    edges: Sequence[int] = DEFAULT_LENGTH_EDGES,
    src_eos: bool = True,
    strict: bool = False,
) -> TranslationReport:
    """Translate ``(source, reference)`` pairs greedily and score them: exact match, BLEU, by-length accuracy.

    Source words missing from ``src_vocab`` are translated as ``<unk>`` (as :func:`translate`) and counted in
    :attr:`TranslationReport.unknown_words`; ``strict=True`` raises on them instead. Sources too long for the
    model's positions are truncated and counted in :attr:`TranslationReport.truncated_sources`; an empty source
    is translated (from EOS alone) and scored in a length bucket of its own, ``"0"``.

    A row that is not two strings (``None``, a number, a missing reference) is not text to score: it raises a
    TypeError that names its index, rather than being skipped, since the report's lists stay aligned with
    ``pairs`` row by row. Text that is merely poor (an empty source, unknown words, an overlong sentence) is
    scored and counted as above.

    Raises:
        TypeError: if ``pairs`` is a str or not a sequence (a tensor, ``None``), or a row is not a
            ``(source, reference)`` pair of str (``pairs[3]: expected ...``); as :func:`translate`.
        ValueError: if ``pairs`` is empty, or as :func:`translate`.
    """
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence):
        raise TypeError(f"pairs: expected a list of (source, reference) str pairs, got {type(pairs).__name__}")
    if len(pairs) == 0:
        raise ValueError("pairs: expected at least one (source, reference) pair, got none")
    for i, pair in enumerate(pairs):
        if (isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2
                or not all(isinstance(x, str) for x in pair)):  # fmt: skip
            raise TypeError(f"pairs[{i}]: expected a (source, reference) pair of str, got {pair!r:.60}")
    _check_edges(edges)
    sources = [s for s, _ in pairs]
    refs = [r for _, r in pairs]
    hyps, truncated = _translate(model, sources, src_vocab, tgt_vocab, batch_size=batch_size, max_len=None,
                                 src_eos=src_eos, strict=strict)  # fmt: skip
    correct = [h.split() == r.split() for h, r in zip(hyps, refs, strict=True)]
    return TranslationReport(
        sources, refs, hyps, correct, sum(correct) / len(correct), corpus_bleu(hyps, refs),
        accuracy_by_length([len(s.split()) for s in sources], correct, edges),
        sum(w not in src_vocab for s in sources for w in s.split()), truncated,
    )  # fmt: skip


@torch.no_grad()
def lm_nats_per_token(model: torch.nn.Module, ids: Tensor, block_size: int, *, batch_size: int = 64) -> float:
    """Mean next-token cross-entropy (nats per token) of a language model over a 1-D id stream.

    The stream is cut into consecutive, non-overlapping windows of ``block_size + 1`` ids (a shorter tail is
    dropped); every id after a window's first is predicted from the ids before it in the window.

    Shape:
        ids: ``(N,)`` long.

    The model is put in eval mode for the call and restored to its mode after, also when it raises.

    Raises:
        ValueError: if ``ids`` is not 1-D or shorter than ``block_size + 1``; whatever the model raises.
    """
    block_size = check_int("block_size", block_size, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    if check_tensor("ids", ids, "int").dim() != 1 or ids.numel() < block_size + 1:
        raise ValueError(
            f"ids: expected a 1-D stream of at least block_size + 1 = {block_size + 1} ids, got {tuple(ids.shape)}"
        )
    device = next(model.parameters()).device
    n = (ids.numel() - 1) // block_size
    x_all = ids[: n * block_size].view(n, block_size)  # (n, block_size)
    y_all = ids[1 : n * block_size + 1].view(n, block_size)  # (n, block_size)
    was_training = model.training
    model.eval()
    total = 0.0
    try:  # a model that raises (ids out of its range, say) is left in the mode it came in
        for start in range(0, n, batch_size):
            x, y = x_all[start : start + batch_size].to(device), y_all[start : start + batch_size].to(device)
            logits = model(x)  # (B, block_size, V)
            total += float(torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum"))
    finally:
        model.train(was_training)
    return total / y_all.numel()


def bigram_nats_per_token(train_ids: Tensor, valid_ids: Tensor, vocab_size: int, *, k: float = 0.01) -> float:
    """Validation cross-entropy (nats per token) of an add-``k`` smoothed bigram model counted on ``train_ids``.

    p(b | a) = (count(a, b) + k) / (count(a) + k · V), the baseline a language model must beat.

    Shape:
        train_ids, valid_ids: ``(N,)`` int64 or int32 (the two streams may have different lengths), ids in
        ``[0, vocab_size)``.

    Raises:
        TypeError: if ``k`` is not a number, ``vocab_size`` not an int, or a stream is not an int64/int32 tensor
            (uint8 and bool tensors would index as masks, not as ids).
        ValueError: if ``k`` is not finite and ``> 0``, a stream has fewer than 2 ids, or an id lies outside
            ``[0, vocab_size)``.
    """
    check_number("k", k, 0.0, math.inf, open_min=True, open_max=True)
    vocab_size = check_int("vocab_size", vocab_size, 1)
    for name, ids in (("train_ids", train_ids), ("valid_ids", valid_ids)):
        if check_tensor(name, ids, "int", "(N,)", dtype=(torch.int64, torch.int32)).numel() < 2:
            raise ValueError(f"{name}: expected at least 2 ids, got {ids.numel()}")
        check_ids(name, ids, vocab_size)
    counts = torch.zeros(vocab_size, vocab_size, dtype=torch.float64)  # (V, V)
    counts.index_put_((train_ids[:-1], train_ids[1:]), torch.ones(train_ids.numel() - 1, dtype=torch.float64),
                      accumulate=True)  # fmt: skip
    log_probs = (counts + k).log() - (counts.sum(dim=1, keepdim=True) + k * vocab_size).log()  # (V, V)
    return float(-log_probs[valid_ids[:-1], valid_ids[1:]].mean())
