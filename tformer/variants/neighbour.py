"""A token embedding handed its neighbours before any attention (``11_real_sentences``, §2, the reading tagger).

:class:`NeighbourEmbedding` replaces an encoder's token embedding with the token's vector plus, optionally,

- a **pair embedding**: a learned vector for every (previous token, token) pair seen in training, and one
  ``<unk>`` row, held at zero, for pairs never seen (:func:`pair_keys` numbers the pairs);
- a **local convolution**: one width-3 filter and one bias per channel (a depthwise ``Conv1d``, ``groups=D``),
  added to the vector, so each channel mixes the token with its left and right neighbour.

Padding is zeroed before the convolution, so the last token of a short sentence in a *right*-padded batch sees
zeros on its right, as it does when its sentence is read alone: batched and single reading give the same
vectors. This holds for right padding only: left padding gives the first real token the pair (pad, token)
instead of (sentence start, token), and ``pad_id`` must not occur inside a sentence (it is zeroed there too).

Source: the book's own construction, in the spirit of the character-bigram features long used in Chinese
word segmentation and tagging (a character's reading or word boundary is mostly settled by its neighbours).

Dimension letters: B batch, L length, D ``d_model``, V vocabulary (the token embedding's rows).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from tformer._checks import check_bool, check_ids, check_int, check_tensor, check_type

__all__ = ["NeighbourEmbedding", "pair_keys"]


def pair_keys(tokens: Tensor, vocab_size: int) -> Tensor:
    """One integer per (previous token, token) pair: ``tokens (B, L) -> keys (B, L)``, always ``int64``.

    The key is ``previous * (V + 1) + token``; the first token's "previous token" is ``V``, an id no token has,
    so distinct pairs get distinct keys and a sentence start is a pair of its own. The keys are computed in
    ``int64`` whatever the integer dtype of ``tokens`` (in ``int32`` they would overflow from V = 46,341 on).

    Args:
        tokens: ids in ``[0, V]`` (``V`` itself is allowed: it is the start marker); a negative id would
            collide with another pair's key.
        vocab_size: ``V``, an int >= 1.

    Raises:
        TypeError: if ``tokens`` is not an integer tensor or ``vocab_size`` not an int.
        ValueError: if ``tokens`` is not ``(B, L)``, holds an id outside ``[0, V]``, or ``vocab_size < 1``.
    """
    check_tensor("tokens", tokens, "int", "(B, L)")
    vocab_size = check_int("vocab_size", vocab_size, 1)
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) > vocab_size):
        raise ValueError(
            f"tokens: expected ids in [0, V={vocab_size}] for pair_keys, got min {int(tokens.min())}, "
            f"max {int(tokens.max())}"
        )
    tokens = tokens.long()  # (B, L) int64: previous * (V + 1) overflows int32 for large V
    previous = torch.cat([torch.full_like(tokens[:, :1], vocab_size), tokens[:, :-1]], dim=1)  # (B, L)
    return previous * (vocab_size + 1) + tokens  # (B, L) int64


class NeighbourEmbedding(nn.Module):
    """A token's embedding plus a (previous token, token) pair embedding and/or a width-3 convolution.

    Args:
        embed: the token embedding ``(V, D)`` it extends (kept as ``self.embed``, its weights untouched).
        seen_pairs: the sorted keys (:func:`pair_keys`) of the pairs that get their own row, shape ``(P,)``;
            ``None`` for no pair table. Stored as a persistent buffer (saved in the ``state_dict``, so a model
            built with another table refuses to load). Row ``P`` (``self.unk_pair``) is the ``<unk>`` pair:
            zero, and its gradient is always zero (``padding_idx``), so no optimiser moves it from zero. The
            rows start at the scale (standard deviation) of ``embed``'s weights, on its device and in its dtype.
        conv: add ``x + conv(x)``, one width-3 filter and one bias per channel (4·D weights), zero beyond the
            sentence's ends. With the pairs on it reads their sum, so a token's vector reaches two to its left.
        pad_id: the padding id; padded positions are set to zero before the convolution, so a right-padded
            batch gives every real position what the unpadded sentence gives it. It must not occur inside a
            sentence (it would be zeroed there too), and left padding is not supported (it changes the first
            token's pair). ``None``: no padding.

    Shape:
        ``forward(tokens (B, L) int) -> (B, L, D)`` in the dtype of ``embed``.

    Raises:
        TypeError / ValueError: on a bad argument (``embed`` not an ``nn.Embedding``, ``seen_pairs`` not a sorted
        1-D integer tensor, ``pad_id`` outside ``[0, V)``) or on bad ``tokens`` (not ``(B, L)`` integer ids in
        ``[0, V)``); with ``conv``, on ``tokens`` of length 0.
    """

    def __init__(
        self, embed: nn.Embedding, seen_pairs: Tensor | None = None, *, conv: bool = False, pad_id: int | None = None
    ) -> None:
        super().__init__()
        check_type("embed", embed, nn.Embedding, "an nn.Embedding")
        V, D = embed.num_embeddings, embed.embedding_dim
        check_bool("conv", conv)
        if pad_id is not None:
            pad_id = check_int("pad_id", pad_id, 0, V - 1)
        self.embed, self.vocab_size, self.pad_id = embed, V, pad_id
        self.pairs: nn.Embedding | None = None
        if seen_pairs is not None:
            check_tensor("seen_pairs", seen_pairs, "int", "(P,)", nonempty="P")
            if bool((seen_pairs[1:] <= seen_pairs[:-1]).any()):
                raise ValueError("seen_pairs: expected strictly increasing keys (torch.unique sorts), got unsorted")
            self.register_buffer("seen_pairs", seen_pairs.to(embed.weight.device, torch.long).clone())  # (P,)
            self.unk_pair = len(seen_pairs)
            self.pairs = nn.Embedding(
                self.unk_pair + 1, D, padding_idx=self.unk_pair, device=embed.weight.device, dtype=embed.weight.dtype
            )  # (P + 1, D)
            nn.init.normal_(self.pairs.weight, std=embed.weight.std().item())  # the scale of the tokens'
            with torch.no_grad():
                self.pairs.weight[self.unk_pair].zero_()
        self.conv = (
            nn.Conv1d(D, D, kernel_size=3, padding=1, groups=D, device=embed.weight.device, dtype=embed.weight.dtype)
            if conv
            else None
        )

    def pair_ids(self, tokens: Tensor) -> Tensor:
        """Pair ids, ``tokens (B, L) -> (B, L)`` int64: a pair's rank among ``seen_pairs``, or ``unk_pair``.

        ``tokens`` must be on the device of the module (of ``seen_pairs``), as for any module call.

        Raises:
            ValueError: if the module has no pair table (``seen_pairs=None``), or ``tokens`` is on another
                device than ``seen_pairs``; and what :func:`pair_keys` raises (bad dtype, shape or ids).
        """
        if self.pairs is None:
            raise ValueError("pair_ids: expected a NeighbourEmbedding built with seen_pairs, got seen_pairs=None")
        table = self.seen_pairs
        if isinstance(tokens, Tensor) and tokens.device != table.device:
            raise ValueError(
                f"tokens: expected tokens on the module's device {table.device} (where seen_pairs is), "
                f"got tokens on {tokens.device}"
            )
        keys = pair_keys(tokens, self.vocab_size)  # (B, L) int64
        rank = torch.searchsorted(table, keys).clamp(max=len(table) - 1)  # (B, L): where the key would sit
        return torch.where(table[rank] == keys, rank, self.unk_pair)  # (B, L)

    def forward(self, tokens: Tensor) -> Tensor:
        """The neighbour-aware embedding, ``tokens (B, L) int -> (B, L, D)`` in the dtype of ``embed``.

        ``tokens`` are ids in ``[0, V)``, right-padded with ``pad_id`` if padded, on the module's device.

        Raises:
            TypeError: if ``tokens`` is not an integer tensor.
            ValueError: if it is not ``(B, L)``, holds an id outside ``[0, V)``, is on another device than the
                pair table, or (with ``conv``) has length ``L = 0``.
        """
        check_tensor("tokens", tokens, "int", "(B, L)")
        check_ids("tokens", tokens, self.vocab_size)
        if self.conv is not None and tokens.shape[1] == 0:
            raise ValueError("tokens: expected at least one position (L >= 1) for the convolution, got L = 0")
        x = self.embed(tokens)  # (B, L, D)
        if self.pairs is not None:
            x = x + self.pairs(self.pair_ids(tokens))  # (B, L, D)
        if self.conv is not None:
            if self.pad_id is not None:  # zeros past a sentence's end, as when it is read alone
                x = x.masked_fill((tokens == self.pad_id).unsqueeze(-1), 0.0)  # (B, L, D)
            x = x + self.conv(x.transpose(1, 2)).transpose(1, 2)  # (B, L, D); Conv1d works on (B, D, L)
        return x
