"""Subword units: a byte-pair-encoding tokenizer trained on the book's own sentences with ``sentencepiece``.

Prepared for the chapter on real data (issue 15). A word vocabulary gives every unseen word the same ``<unk>``;
byte-pair encoding (Sennrich et al. 2016, "Neural Machine Translation of Rare Words with Subword Units") splits
rare words into pieces seen in training, which is what the Transformer paper did (Vaswani et al. 2017, §5.1: a
shared source–target BPE vocabulary of about 37,000 tokens). Training and encoding are done by Google's
``sentencepiece`` library (Kudo & Richardson 2018), in memory and offline; this module only adapts it to the book's
:class:`tformer.data.text.Vocab`.

Pieces are strings without spaces (a word start is marked by ``▁``, U+2581), so a sentence's pieces joined by
spaces can go wherever the book expects space-separated tokens, e.g. :func:`tformer.training.metrics.translate`.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence

import sentencepiece as spm

from tformer._checks import check_choice, check_int, check_number, check_strs
from tformer.data.text import Vocab

__all__ = ["SubwordTokenizer"]


NORMALIZATIONS = ("nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity")  # sentencepiece's built-in rules
MAX_SENTENCE_BYTES = 4192  # sentencepiece's default max_sentence_length: longer sentences it skips in training


class SubwordTokenizer:
    """A trained sentencepiece BPE model: text → pieces → text.

    Build one with :meth:`train`; ``decode(encode(text)) == text`` for text made of characters seen in training,
    up to sentencepiece's normaliser. By default (``normalization="nmt_nfkc"``, sentencepiece's own default) it
    applies Unicode NFKC (full-width ``Ａ``, ``１`` and ``，`` come back as ``A``, ``1`` and ``,``; ligatures such as
    ``ﬁ`` are split); with ``normalization="identity"`` characters are kept as they are, which matters when the
    output is scored against text that uses full-width punctuation (Chinese ``，`` and ``？``). Either way it turns
    tabs and newlines into spaces, collapses runs of them to one space and drops leading and trailing whitespace
    (``decode(encode(" a\tb\n")) == "a b"``). So the round trip is exact for text with single spaces (and, by
    default, NFKC-normalised).

    Args:
        model_proto: a serialised sentencepiece model (what :meth:`train` produces; store it to reload).

    Raises:
        TypeError: if ``model_proto`` is not ``bytes``. ValueError: if it is empty or sentencepiece cannot read
            it.
    """

    def __init__(self, model_proto: bytes) -> None:
        if not isinstance(model_proto, (bytes, bytearray)):
            raise TypeError(f"model_proto: expected bytes (a serialised sentencepiece model), got {type(model_proto).__name__}")
        self.model_proto = bytes(model_proto)
        if not self.model_proto:  # sentencepiece accepts b"" and fails only at the first use
            raise ValueError("model_proto: expected a serialised sentencepiece model, got empty bytes")
        try:
            self._sp = spm.SentencePieceProcessor(model_proto=self.model_proto)
        except RuntimeError as err:
            raise ValueError(f"model_proto: expected a serialised sentencepiece model, got bytes it rejects ({err})") from err
        if self._sp.get_piece_size() == 0:
            raise ValueError("model_proto: expected a serialised sentencepiece model, got one with no pieces")

    @classmethod
    def train(
        cls,
        sentences: Iterable[str],
        vocab_size: int,
        *,
        character_coverage: float = 1.0,
        normalization: str = "nmt_nfkc",
    ) -> SubwordTokenizer:
        """Learn at most ``vocab_size`` BPE pieces (single characters included) from ``sentences``, in memory.

        One thread, so the same sentences always give the same pieces. ``character_coverage`` is the share of
        the characters kept as pieces (1.0: all; sentencepiece suggests 0.9995 for large Chinese corpora).
        ``normalization`` is sentencepiece's normalisation rule, one of :data:`NORMALIZATIONS`: ``"nmt_nfkc"``
        (its default: NFKC plus a few NMT clean-ups), ``"nfkc"``, their case-folding ``_cf`` forms, or
        ``"identity"`` (no change). The vocabulary may come out smaller than ``vocab_size`` on a small corpus.

        Raises:
            TypeError: if ``sentences`` is a ``str`` (pass a list of sentences) or holds a non-``str``, or an
                argument has the wrong type.
            ValueError: if ``vocab_size`` is not an int >= 2 or is smaller than the corpus's distinct characters,
                ``character_coverage`` is outside ``[0.98, 1]`` (sentencepiece's range), ``normalization`` is not
                one of :data:`NORMALIZATIONS`, ``sentences`` is
                empty, or a sentence is longer than :data:`MAX_SENTENCE_BYTES` in UTF-8 (sentencepiece would drop
                it from training without a word; the message gives its index: split it first).
        """
        vocab_size = check_int("vocab_size", vocab_size, 2)
        check_number("character_coverage", character_coverage, 0.98, 1.0)
        check_choice("normalization", normalization, NORMALIZATIONS)
        sentences = check_strs("sentences", sentences, "sentence", "wrap one sentence in a list")
        for index, sentence in enumerate(sentences):
            size = len(sentence.encode("utf-8"))
            if size > MAX_SENTENCE_BYTES:
                raise ValueError(f"sentences[{index}]: expected at most {MAX_SENTENCE_BYTES} bytes in UTF-8 (longer "
                                 f"ones sentencepiece leaves out of training), got {size}; split it")  # fmt: skip
        sentences = [s for s in sentences if s.strip()]
        if not sentences:
            raise ValueError("sentences: expected at least one non-empty sentence, got none")
        model = io.BytesIO()
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(sentences), model_writer=model, model_type="bpe", vocab_size=vocab_size,
                character_coverage=character_coverage, normalization_rule_name=normalization, hard_vocab_limit=False, num_threads=1, minloglevel=2,
                max_sentence_length=MAX_SENTENCE_BYTES,
                unk_id=0, bos_id=-1, eos_id=-1, pad_id=-1,  # the book's Vocab adds its own specials
            )  # fmt: skip
        except RuntimeError as err:
            if "smaller than required_chars" in str(err):
                raise ValueError(
                    f"vocab_size: expected at least the corpus's distinct characters plus <unk>, got {vocab_size} "
                    f"({str(err).split('] ')[-1].strip()})"
                ) from err
            raise ValueError(f"sentences: expected a corpus sentencepiece can train on, got this error: {err}") from err
        return cls(model.getvalue())

    @property
    def pieces(self) -> list[str]:
        """The learned pieces in sentencepiece's id order, without its ``<unk>``."""
        sp = self._sp
        return [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not (sp.is_unknown(i) or sp.is_control(i))]

    def vocab(self) -> Vocab:
        """A :class:`tformer.data.text.Vocab` of :attr:`pieces` (ids from 4; ``<pad> <bos> <eos> <unk>`` first)."""
        return Vocab(self.pieces)

    def encode(self, text: str) -> list[str]:
        """Split ``text`` into pieces: ``"I am learning."`` → ``["▁I", "▁am", "▁learn", "ing", "."]``.

        Raises:
            TypeError: if ``text`` is not a ``str``.
        """
        if not isinstance(text, str):
            raise TypeError(f"text: expected a str, got {type(text).__name__}")
        return self._sp.encode(text, out_type=str)

    def decode(self, pieces: Sequence[str]) -> str:
        """Join pieces back into text (``▁`` becomes a space); ``<unk>`` decodes as ``⁇``.

        A piece the model lacks is copied verbatim, ``▁`` included, as sentencepiece does: ``decode(["zzz"]) ==
        "zzz"`` and ``decode(["▁zzz"]) == "▁zzz"``. That is how a character unseen in training (which
        :meth:`encode` returns as a piece of its own) still comes back unchanged.

        Raises:
            TypeError: if ``pieces`` is a ``str`` or holds a non-``str``.
        """
        return self._sp.decode(check_strs("pieces", pieces, "piece", "call encode first"))

    def __len__(self) -> int:
        return len(self.pieces)

    def __repr__(self) -> str:
        return f"SubwordTokenizer(pieces={len(self)}, first={self.pieces[:6]})"
