"""Text in, ids out: tokenisers, the vocabulary, real English text, and padded length-bucketed batches.

Introduced in ``02_seq2seq_bottleneck`` (the running-example corpus) and ``12_three_families`` (a character-level
language model on real English).

- Tokenisers: :func:`word_tokenize` (whitespace) and :func:`char_tokenize` (one token per character).
- :class:`Vocab` maps tokens to ids with four special tokens at fixed ids: ``PAD_ID = 0``, ``BOS_ID = 1``,
  ``EOS_ID = 2``, ``UNK_ID = 3``; ``decode(encode(tokens)) == tokens`` for in-vocabulary tokens.
- :func:`load_english_text`: English prose shipped with Python itself (``pydoc_data.topics``, the text behind
  ``help("if")``), cleaned of code, grammar rules and tables, split paragraph-wise into train and validation.
  Nothing is downloaded. The text differs slightly between Python versions; within one version it is fixed.
- :func:`pad_sequences`, :func:`bucket_batches` and :class:`PairBatches` turn lists of id sequences into padded
  ``(B, L)`` tensors, optionally grouping sequences of similar length so little compute is spent on padding;
  :class:`WindowBatches` cuts a token stream into random windows for language models.
"""

from __future__ import annotations

import functools
import numbers
import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from tformer._checks import check_flags, check_ids, check_int, check_strs, check_tensor, is_int, type_name

__all__ = [
    "BOS_ID",
    "EOS_ID",
    "PAD_ID",
    "SPECIAL_TOKENS",
    "UNK_ID",
    "EnglishText",
    "PairBatches",
    "SplitText",
    "Vocab",
    "WindowBatches",
    "bucket_batches",
    "char_tokenize",
    "load_english_text",
    "pad_sequences",
    "word_tokenize",
]

PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
SPECIAL_TOKENS: tuple[str, ...] = ("<pad>", "<bos>", "<eos>", "<unk>")


def word_tokenize(text: str) -> list[str]:
    """Split on whitespace: ``"猫 坐 在 垫子 上"`` → ``["猫", "坐", "在", "垫子", "上"]``."""
    return text.split()


def char_tokenize(text: str) -> list[str]:
    """One token per character, spaces and newlines included: ``"a cat"`` → ``["a", " ", "c", "a", "t"]``."""
    return list(text)


class Vocab:
    """A token ↔ id table whose first four ids are the special tokens ``<pad> <bos> <eos> <unk>``.

    Args:
        tokens: the ordinary tokens, in id order (ids start at 4). Must be unique non-empty strings and must not
            repeat a special token.

    Raises:
        TypeError: if ``tokens`` is a ``str`` or holds something other than a ``str``.
        ValueError: if ``tokens`` repeats a token, holds an empty string, or contains a special token.
    """

    def __init__(self, tokens: Iterable[str]) -> None:
        tokens = check_strs("tokens", tokens, "token", "call word_tokenize or char_tokenize")
        if "" in tokens:
            raise ValueError("tokens: expected non-empty strings, got ''")
        dupes = sorted(t for t, c in Counter(tokens).items() if c > 1)
        if dupes:
            raise ValueError(f"tokens: expected unique tokens, got duplicates {dupes[:5]}")
        clash = sorted(set(tokens) & set(SPECIAL_TOKENS))
        if clash:
            raise ValueError(
                f"tokens: expected no special tokens (they are added at ids 0-3), got {clash}"
            )
        self.itos: tuple[str, ...] = (*SPECIAL_TOKENS, *tokens)
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(self.itos)}

    @classmethod
    def build(cls, sequences: Iterable[Sequence[str]], *, min_freq: int = 1) -> Vocab:
        """Build from tokenised sequences; ids ordered by falling frequency, ties by the token's code points.

        The order depends only on the counts, so the same text always gives the same vocabulary.

        Args:
            sequences: token lists, e.g. ``(word_tokenize(s) for s in texts)``; a ``str`` in place of a token
                list (which would count its characters) is refused.

        Raises:
            TypeError: if ``sequences`` or one of its items is a ``str``, or a token is not a ``str``.
            ValueError: if no token reaches ``min_freq`` (for example an empty corpus), or ``min_freq < 1``.
        """
        min_freq = check_int("min_freq", min_freq, 1)
        if isinstance(sequences, str):
            raise TypeError("sequences: expected token lists, got a str (call word_tokenize or char_tokenize)")
        counts: Counter[str] = Counter()
        for seq in sequences:
            if isinstance(seq, str):
                raise TypeError(
                    "sequences: expected token lists, got a str item (tokenise it first: word_tokenize(text))"
                )
            counts.update(check_strs("sequences", seq, "token", "tokenise it first: word_tokenize(text)"))
        kept = sorted((t for t, c in counts.items() if c >= min_freq and t not in SPECIAL_TOKENS),
                      key=lambda t: (-counts[t], t))  # fmt: skip
        if not kept:
            raise ValueError(f"sequences: expected a token that occurs at least min_freq={min_freq} times, got none")
        return cls(kept)

    def __len__(self) -> int:
        return len(self.itos)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.itos == other.itos

    def __hash__(self) -> int:
        return hash(self.itos)

    def __contains__(self, token: object) -> bool:
        """True for the ordinary tokens only: a special token's spelling is not a word of the vocabulary."""
        return token in self.stoi and self.stoi[token] >= len(SPECIAL_TOKENS)  # type: ignore[index]

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, first={list(self.itos[4:10])})"

    def encode(
        self,
        tokens: Sequence[str],
        *,
        add_bos: bool = False,
        add_eos: bool = False,
        strict: bool = False,
        max_len: int | None = None,
    ) -> list[int]:
        """Map tokens to ids; unknown tokens become ``UNK_ID`` unless ``strict``.

        The special tokens' spellings (``"<pad>"``, ``"<eos>"``, ...) in user text are ordinary unknown words:
        they map to ``UNK_ID`` (or raise with ``strict``), never to a control id, so a literal ``"<eos>"`` in a
        sentence cannot end it and a literal ``"<pad>"`` is not masked. Only ``add_bos``/``add_eos`` add
        control ids, and ``token in vocab`` is False for them (so :func:`tformer.training.metrics.evaluate_translation`
        counts them as unknown words).

        Args:
            tokens: a list of tokens (tokenise strings first; a plain ``str`` or a tensor is rejected).
            add_bos, add_eos: prepend ``BOS_ID`` / append ``EOS_ID``.
            strict: raise on an unknown token instead of mapping it to ``<unk>``.
            max_len: if given, raise when the result (specials included) is longer.

        Raises:
            TypeError: if ``tokens`` is a ``str`` or a tensor, holds something other than str tokens, or
                ``max_len`` is not an int.
            ValueError: on an unknown token (a special token's spelling included) in strict mode, a negative
                ``max_len``, or a sequence longer than ``max_len``.
        """
        check_flags(add_bos=add_bos, add_eos=add_eos, strict=strict)
        if max_len is not None:
            max_len = check_int("max_len", max_len, 0)
        if isinstance(tokens, str):
            raise TypeError(
                "tokens: expected a list of tokens, got a str (call word_tokenize or char_tokenize)"
            )
        if isinstance(tokens, Tensor):
            raise TypeError("tokens: expected a list of tokens (str), got a Tensor (ids are already encoded)")
        ids = [BOS_ID] if add_bos else []
        for i, tok in enumerate(tokens):
            if not isinstance(tok, str):  # ids or bytes would all become <unk>, silently
                hint = " (decode ids, not encode)" if is_int(tok) else ""
                raise TypeError(f"tokens[{i}]: expected a str token, got {type_name(tok)}{hint}")
            idx = self.stoi.get(tok)
            if idx is not None and idx < len(SPECIAL_TOKENS):
                idx = None  # a special token's spelling in text is a word the vocabulary lacks
            if idx is None:
                if strict:
                    raise ValueError(
                        f"tokens: expected tokens of the vocabulary (size {len(self)}), got unknown token {tok!r}"
                    )
                idx = UNK_ID
            ids.append(idx)
        if add_eos:
            ids.append(EOS_ID)
        if max_len is not None and len(ids) > max_len:
            raise ValueError(f"tokens: expected at most max_len={max_len} ids, got {len(ids)}")
        return ids

    def decode(
        self, ids: Iterable[int] | Tensor, *, skip_special: bool = True, stop_at_eos: bool = True
    ) -> list[str]:
        """Map ids back to tokens.

        Args:
            ids: ints or a 1-D integer tensor.
            skip_special: drop ``<pad>``, ``<bos>``, ``<eos>`` (``<unk>`` is kept: it stands for a real token).
            stop_at_eos: stop at the first ``EOS_ID``.

        Raises:
            TypeError: if an id is not an int (a float, str or bool), or ``ids`` is a str or a float tensor.
            ValueError: if an id is outside ``[0, len(self))``, or ``ids`` is a tensor that is not 1-D.
        """
        check_flags(skip_special=skip_special, stop_at_eos=stop_at_eos)
        if isinstance(ids, Tensor):
            ids = check_tensor("ids", ids, "int", "(L,)").tolist()
        if isinstance(ids, str):
            raise TypeError("ids: expected ints or a 1-D integer tensor, got a str")
        out = []
        for idx in ids:
            if isinstance(idx, bool) or not isinstance(idx, numbers.Integral):
                raise TypeError(f"ids: expected ints, got {type(idx).__name__} {idx!r}")
            idx = int(idx)
            if not 0 <= idx < len(self.itos):
                raise ValueError(f"ids: expected ids in [0, V={len(self.itos)}), got {idx}")
            if idx == EOS_ID and stop_at_eos:
                break
            if skip_special and idx in (PAD_ID, BOS_ID, EOS_ID):
                continue
            out.append(self.itos[idx])
        return out

    def check_ids(self, ids: Tensor, name: str = "ids") -> None:
        """Raise if ``ids`` holds an id the vocabulary does not have (a batch encoded with another vocabulary).

        Raises:
            TypeError: if ``ids`` is not an integer tensor.
            ValueError: naming ``name``, the range of ids found and the vocabulary size (see
                :func:`tformer._checks.check_ids`).
        """
        check_ids(name, check_tensor(name, ids, "int"), len(self))

    def to_list(self) -> list[str]:
        """The ordinary tokens in id order (``Vocab(v.to_list()) == v``), e.g. to store in a checkpoint."""
        return list(self.itos[len(SPECIAL_TOKENS) :])


# ----------------------------------------------------------------------------------------------- real text
@dataclass(frozen=True)
class SplitText:
    """A real text split into two strings for a character language model; paragraphs (or poems) end with
    ``"\\n"``. :func:`load_english_text` and :func:`tformer.data.poems.load_tang_poems` return one.

    Attributes:
        train: about 90% of the paragraphs.
        validation: every tenth paragraph (deterministic, no shuffling).
        source: where the text came from.
    """

    train: str
    validation: str
    source: str

    def char_vocab(self) -> Vocab:
        """The characters of ``train``, by falling frequency (ties by code point): reproducible for this text."""
        return Vocab.build([char_tokenize(self.train)])


EnglishText = SplitText  # the name before the poems arrived


_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "—": "-", "–": "-", "…": "...", "*": None})


def _clean_paragraph(paragraph: str) -> str | None:
    """Join a paragraph's lines into plain prose, or ``None`` if it is code, grammar, a table or a heading."""
    lines = paragraph.strip("\n").split("\n")
    if any(line.startswith((" ", "\t")) for line in lines):  # code blocks, grammar rules, indented tables
        return None
    text = " ".join(line.strip() for line in lines).translate(_QUOTES)
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) < 40 or not text.isascii() or any(m in text for m in (">>>", "::=", "+--", "===", "|")):
        return None
    letters = sum(ch.isalpha() or ch == " " for ch in text)
    if letters < 0.85 * len(text):  # symbol-heavy: mostly identifiers and operators
        return None
    return text


@functools.lru_cache(maxsize=4)  # the result is immutable; cleaning takes about a second
def load_english_text(*, validation_every: int = 10) -> SplitText:
    """English prose from Python's own help texts (``pydoc_data.topics``), cleaned; no download.

    Paragraphs that are indented (code, grammar productions), contain interpreter sessions or tables, are shorter
    than 40 characters, or are less than 85% letters and spaces are dropped; curly quotes and dashes become ASCII
    and emphasis asterisks are removed. Paragraph ``i`` goes to validation when ``i % validation_every ==
    validation_every - 1``, else to train. About 200 k characters of train text in CPython 3.11.

    Returns:
        A :class:`SplitText`.

    Raises:
        ValueError: if ``validation_every < 2``.
    """
    validation_every = check_int("validation_every", validation_every, 2)
    from pydoc_data.topics import topics  # the standard library's help texts

    paragraphs = []
    for key in sorted(topics):
        for raw in re.split(r"\n[ \t]*\n", topics[key]):
            cleaned = _clean_paragraph(raw)
            if cleaned is not None:
                paragraphs.append(cleaned)
    train = "".join(
        p + "\n" for i, p in enumerate(paragraphs) if i % validation_every != validation_every - 1
    )
    valid = "".join(
        p + "\n" for i, p in enumerate(paragraphs) if i % validation_every == validation_every - 1
    )
    return SplitText(train=train, validation=valid, source="pydoc_data.topics (CPython help texts)")


# ----------------------------------------------------------------------------------------------- batching
def pad_sequences(
    sequences: Sequence[Sequence[int]], *, pad_id: int = PAD_ID, max_len: int | None = None
) -> Tensor:
    """Stack id sequences (or 0/1 flags, as bools) into one right-padded ``torch.long`` tensor.

    Shape:
        - output: ``(B, L)`` with ``L`` the longest sequence.

    Raises:
        TypeError: if a sequence holds something other than ints or bools (a float would be cut to an int silently), or
            ``pad_id`` / ``max_len`` is not an int.
        ValueError: if ``sequences`` is empty, or a sequence is longer than ``max_len``.
    """
    pad_id = check_int("pad_id", pad_id)  # any int: -100 pads targets that cross-entropy ignores
    if len(sequences) == 0:
        raise ValueError("sequences: expected at least one sequence, got none")
    longest = max(len(s) for s in sequences)
    if max_len is not None and longest > check_int("max_len", max_len, 1):
        raise ValueError(f"sequences: expected lengths of at most max_len={max_len}, got {longest}")
    out = torch.full((len(sequences), longest), pad_id, dtype=torch.long)  # (B, L)
    for i, seq in enumerate(sequences):
        try:
            ids = torch.as_tensor(seq)  # (len,)
        except (TypeError, ValueError, RuntimeError):
            ids = None
        if ids is None or ids.dim() != 1 or (ids.numel() and (ids.dtype.is_floating_point or ids.dtype.is_complex)):
            raise TypeError(f"sequences[{i}]: expected a sequence of int ids, got {seq!r:.60}")
        out[i, : len(seq)] = ids
    return out


def bucket_batches(
    lengths: Sequence[int], batch_size: int, *, shuffle: bool = True, seed: int = 0, pool: int = 50
) -> list[list[int]]:
    """Group example indices into batches of similar length.

    The indices are shuffled, cut into pools of ``pool * batch_size``, each pool sorted by length and cut into
    batches, and the batches shuffled: every batch holds similar lengths (little padding) while the order still
    changes with ``seed``. ``shuffle=False`` sorts everything by length (for evaluation).

    Returns:
        A list of batches, each a list of indices into ``lengths``; together they cover every index once.

    Raises:
        ValueError: if ``lengths`` is empty, or ``batch_size`` or ``pool`` is < 1.
    """
    check_flags(shuffle=shuffle)
    if len(lengths) == 0:
        raise ValueError("lengths: expected at least one example to batch, got none")
    batch_size = check_int("batch_size", batch_size, 1)
    pool = check_int("pool", pool, 1)
    order = list(range(len(lengths)))
    if not shuffle:
        order.sort(key=lambda i: lengths[i])
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    rng = random.Random(check_int("seed", seed))
    rng.shuffle(order)
    batches = []
    step = pool * batch_size
    for start in range(0, len(order), step):
        chunk = sorted(order[start : start + step], key=lambda i: lengths[i])
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


class PairBatches:
    """Re-iterable ``(src, tgt)`` batches for sequence-to-sequence training, optionally bucketed by length.

    Each pass (epoch) reshuffles with ``seed + epoch`` when ``shuffle``; iterate it again for the next epoch.
    Targets get ``EOS_ID`` appended (``add_eos``) so a model learns to stop; sources get one too (``src_eos``)
    so the decoder can see where the source ends (as in fairseq); ``BOS_ID`` is added later by ``shift_right``.

    ``pool`` trades padding against optimisation (see :func:`bucket_batches`): ``pool=1`` makes each batch a
    random sample (mixed lengths, more padding); a large pool makes each batch one narrow length range (little
    padding). Measured on the copy task and the running-example corpus, single-length batches train markedly
    worse per step (the gradient of one batch then speaks for one length only), so the default is 1.

    Args:
        src, tgt: lists of id sequences of equal count.
        batch_size: sequences per batch.
        shuffle: reshuffle every epoch (training) or keep a fixed length-sorted order (evaluation).
        seed: base seed of the shuffling.
        add_eos: append ``EOS_ID`` to each target.
        src_eos: append ``EOS_ID`` to each source (use the same choice when translating).
        pool: batches per length-sorted pool; 1 = no bucketing.

    Yields:
        ``(src, tgt)`` long tensors of shapes ``(B, S)`` and ``(B, L)``, padded with ``PAD_ID``.

    Raises:
        ValueError: if ``src`` is empty, the two lists differ in length, a sequence is empty, or ``batch_size``
            or ``pool`` is < 1.
    """

    def __init__(
        self,
        src: Sequence[Sequence[int]],
        tgt: Sequence[Sequence[int]],
        batch_size: int,
        *,
        shuffle: bool = True,
        seed: int = 0,
        add_eos: bool = True,
        src_eos: bool = True,
        pool: int = 1,
    ) -> None:
        check_flags(shuffle=shuffle, add_eos=add_eos, src_eos=src_eos)
        if len(src) == 0:
            raise ValueError("src: expected at least one sequence to batch, got none")
        if len(src) != len(tgt):
            raise ValueError(
                f"src and tgt: expected the same number of sequences, got {len(src)} and {len(tgt)}"
            )
        if any(len(s) == 0 for s in src) or any(len(t) == 0 for t in tgt):
            raise ValueError("src, tgt: expected non-empty sequences, got an empty one")
        pool = check_int("pool", pool, 1)
        self.src = [[*s, EOS_ID] if src_eos else list(s) for s in src]
        self.tgt = [[*t, EOS_ID] if add_eos else list(t) for t in tgt]
        self.batch_size, self.shuffle, self.pool = batch_size, shuffle, pool
        self.seed = check_int("seed", seed, 0, 2**63 - 2**20)  # seed + epoch must stay a valid seed
        self.epoch = 0
        lengths = [max(len(s), len(t)) for s, t in zip(self.src, self.tgt, strict=True)]
        self._lengths = lengths
        bucket_batches(lengths, batch_size)  # validates batch_size

    def __len__(self) -> int:
        return -(-len(self.src) // self.batch_size)

    def __iter__(self) -> Iterator[tuple[Tensor, Tensor]]:
        batches = bucket_batches(
            self._lengths, self.batch_size, shuffle=self.shuffle, seed=self.seed + self.epoch, pool=self.pool
        )
        self.epoch += 1
        for idx in batches:
            yield pad_sequences([self.src[i] for i in idx]), pad_sequences([self.tgt[i] for i in idx])

    @property
    def num_tokens(self) -> int:
        """Source plus target tokens in one epoch (EOS included, padding excluded)."""
        return sum(map(len, self.src)) + sum(map(len, self.tgt))


class WindowBatches:
    """Re-iterable random windows of a token stream for language-model training.

    Each pass yields ``num_batches`` batches ``(x, y)``: ``batch_size`` windows of ``block_size`` ids at random
    offsets, ``y`` being ``x`` moved one id to the right (the next-token targets). Pass ``p`` uses seed
    ``seed + p``, so the stream of batches is reproducible.

    Shape:
        ids: ``(N,)`` long; yields ``x (B, block_size)``, ``y (B, block_size)``.

    Raises:
        ValueError: if ``ids`` is not 1-D or not longer than ``block_size``, or a count is < 1.
    """

    def __init__(
        self, ids: Tensor, block_size: int, batch_size: int, num_batches: int, *, seed: int = 0
    ) -> None:
        block_size, batch_size, num_batches = (check_int(name, value, 1)  # Python ints: NumPy ones could overflow
            for name, value in (("block_size", block_size), ("batch_size", batch_size), ("num_batches", num_batches)))
        if check_tensor("ids", ids, "int", "(N,)").numel() <= block_size:
            raise ValueError(f"ids: expected a stream longer than block_size={block_size}, got {ids.numel()} ids")
        self.ids, self.block_size, self.batch_size, self.num_batches = (
            ids,
            block_size,
            batch_size,
            num_batches,
        )
        self.seed, self.epoch = check_int("seed", seed, 0, 2**63 - 2**20), 0  # seed + epoch: a valid seed

    def __len__(self) -> int:
        return self.num_batches

    def __iter__(self) -> Iterator[tuple[Tensor, Tensor]]:
        gen = torch.Generator().manual_seed(self.seed + self.epoch)
        self.epoch += 1
        offsets = torch.arange(self.block_size)  # (block_size,)
        for _ in range(self.num_batches):
            starts = torch.randint(
                0, self.ids.numel() - self.block_size, (self.batch_size,), generator=gen
            )  # (B,)
            idx = starts[:, None] + offsets  # (B, block_size)
            yield self.ids[idx], self.ids[idx + 1]
