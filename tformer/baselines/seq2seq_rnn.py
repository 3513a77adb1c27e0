"""RNN encoder-decoder, with a fixed context vector or with Bahdanau attention (``02_seq2seq_bottleneck``).

Two models that differ in one thing only, so the chapter can measure the bottleneck:

* ``attention=None`` (Cho et al. 2014; Sutskever et al. 2014): the encoder's final hidden state c is the whole
  sentence. It initialises the decoder and is fed, unchanged, to every decoder step and to the output layer.
* ``attention="bahdanau"`` (Bahdanau et al. 2015): the same decoder, but at each step the context c_i is a
  weighted sum of all encoder states, the weights computed from the previous decoder state.

For speed the recurrences use torch's fused ``nn.GRU`` / ``nn.LSTM`` (batch-first, one layer); chapter 01 and
``tests/unit/baselines/`` prove our from-the-equations :mod:`tformer.baselines.rnn` cells compute exactly what they compute.
Source padding never changes a result: the encoder runs on packed sequences (its final state is taken at each
row's last real token) and attention is masked. Sources must therefore be right-padded.
"""

from __future__ import annotations

import dataclasses
from dataclasses import KW_ONLY, dataclass
from typing import Any, Literal

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from tformer._checks import (
    check_bos_eos,
    check_choice,
    check_flags,
    check_ids,
    check_int,
    check_tensor,
    plain_numbers,
)

__all__ = ["BahdanauAttention", "Seq2SeqRNN", "Seq2SeqRNNConfig"]

DecoderState = Tensor | tuple[Tensor, Tensor]


class BahdanauAttention(nn.Module):
    """Additive attention: score(s, h_j) = vᵀ tanh(W_s s + W_h h_j), softmax over j, context = Σ_j α_j h_j.

    Parameters: ``w_query`` (W_s, no bias), ``w_key`` (W_h, no bias), ``v`` (attn_dim → 1), as in the paper.

    Shape:
        query: (B, Dq) for one decoder step, or (B, L, Dq) for L queries at once.
        keys: (B, S, Dk), the encoder states h_1 … h_S (used as values too).
        mask: optional bool, True = may attend; (B, S) or (B, L, S).
        projected_keys: optional precomputed ``project_keys(keys)`` (B, S, attn_dim), to save work in a loop.
        returns: context (B, Dk) or (B, L, Dk); weights (B, S) or (B, L, S), summing to 1 over allowed keys,
            exactly 0 on masked keys. A row with no allowed key gets all-zero weights and a zero context, with
            finite gradients.

    Raises:
        TypeError: a size is not an int, or ``mask`` is not a bool tensor.
        ValueError: a size is below 1; a tensor has the wrong shape.

    Source: Bahdanau, Cho & Bengio 2015, "Neural Machine Translation by Jointly Learning to Align and
    Translate", §3.1 and Appendix A.1.2.
    """

    def __init__(self, query_dim: int, key_dim: int, attn_dim: int) -> None:
        super().__init__()
        query_dim, key_dim, attn_dim = (check_int(name, value, 1)  # Python ints: NumPy ones could overflow
            for name, value in (("query_dim", query_dim), ("key_dim", key_dim), ("attn_dim", attn_dim)))
        self.w_query = nn.Linear(query_dim, attn_dim, bias=False)
        self.w_key = nn.Linear(key_dim, attn_dim, bias=False)
        self.v = nn.Linear(attn_dim, 1, bias=False)

    def project_keys(self, keys: Tensor) -> Tensor:
        """W_h h_j for every key. Shape: (B, S, Dk) → (B, S, attn_dim)."""
        return self.w_key(keys)

    def forward(
        self, query: Tensor, keys: Tensor, mask: Tensor | None = None, *, projected_keys: Tensor | None = None, checked: bool = False
    ) -> tuple[Tensor, Tensor]:
        """Context and weights for each query; shapes, masking and errors as in the class docstring.

        ``checked=True``: the owning module checked these inputs in this call (see :mod:`tformer._checks`).
        """
        if not checked:
            q = query.unsqueeze(1) if query.dim() == 2 else query  # (B, L, Dq)
            if q.dim() != 3 or q.shape[-1] != self.w_query.in_features:
                raise ValueError(
                    f"query: expected (B, Dq) or (B, L, Dq) with Dq={self.w_query.in_features}, got {tuple(query.shape)}"
                )
            B = q.shape[0]
            check_tensor("keys", keys, "float", "(B, S, Dk)", B=B, Dk=self.w_key.in_features)
            S = keys.shape[1]
            if mask is not None:
                check_tensor("mask", mask, "bool")
                m = mask.unsqueeze(1) if mask.dim() == 2 else mask  # (B, 1, S) or (B, L, S)
                if m.dim() != 3 or m.shape[0] != B or m.shape[-1] != S or m.shape[1] not in (1, q.shape[1]):
                    raise ValueError(f"mask: expected (B, S) or (B, L, S) with B={B}, S={S}, got {tuple(mask.shape)}")
        single = query.dim() == 2
        q = query.unsqueeze(1) if single else query  # (B, L, Dq)
        k = self.project_keys(keys) if projected_keys is None else projected_keys  # (B, S, A)
        scores = self.v(torch.tanh(self.w_query(q).unsqueeze(2) + k.unsqueeze(1))).squeeze(-1)  # (B, L, S)
        if mask is not None:
            if mask.dim() == 2:
                mask = mask.unsqueeze(1)  # (B, 1, S)
            # finfo.min (not -inf) keeps an all-masked row finite; multiplying by the mask then zeroes it.
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)  # (B, L, S)
        if mask is not None:
            weights = weights * mask
        context = weights @ keys  # (B, L, Dk)
        if single:
            return context.squeeze(1), weights.squeeze(1)  # (B, Dk), (B, S)
        return context, weights


@dataclass(frozen=True)
class Seq2SeqRNNConfig:
    """Settings of :class:`Seq2SeqRNN`, in the order its arguments have always had.

    Attributes:
        src_vocab_size, tgt_vocab_size: V of each side.
        emb_dim: embedding width.
        hidden_size: H_hid of encoder and decoder.
        cell: ``"gru"`` or ``"lstm"``.
        pad_id: padding id in both vocabularies (its embeddings are zero and untrained).
        attention: ``None`` (a fixed context vector) or ``"bahdanau"``.
        attn_dim: width of the additive-attention layer (keyword only; ``None``: ``hidden_size``).

    Raises:
        TypeError: a size is not an int.
        ValueError: a size below 1, or a bad ``cell``, ``attention``, ``pad_id`` or ``attn_dim``.
    """

    src_vocab_size: int
    tgt_vocab_size: int
    emb_dim: int
    hidden_size: int
    cell: Literal["gru", "lstm"] = "gru"
    pad_id: int = 0
    attention: Literal["bahdanau"] | None = None
    _: KW_ONLY
    attn_dim: int | None = None

    def __post_init__(self) -> None:
        for name in ("src_vocab_size", "tgt_vocab_size", "emb_dim", "hidden_size"):
            check_int(name, getattr(self, name), 1)
        check_choice("cell", self.cell, ("gru", "lstm"))
        check_choice("attention", self.attention, (None, "bahdanau"))
        vocab = min(self.src_vocab_size, self.tgt_vocab_size)
        if not 0 <= check_int("pad_id", self.pad_id) < vocab:
            raise ValueError(f"pad_id: expected an id in [0, {vocab}), got {self.pad_id}")
        if self.attn_dim is not None:
            check_int("attn_dim", self.attn_dim, 1)
        plain_numbers(self)  # np.int64(64) is accepted, stored as 64


class Seq2SeqRNN(nn.Module):
    """An RNN encoder-decoder for translation, with a fixed context vector or with Bahdanau attention.

    Encoder: embedding → one-layer GRU/LSTM over the source (packed, so padding is skipped), giving states
    h_1 … h_S and a final state. Decoder: the final state initialises a one-layer GRU/LSTM whose input at step i
    is [embed(y_{i−1}); c_i]; logits = W_o [s_i; c_i]. With ``attention=None``, c_i = h_S (the last real token's
    hidden state) for every i — the fixed-length bottleneck; with ``attention="bahdanau"``,
    c_i = Σ_j α_ij h_j with α_i from :class:`BahdanauAttention` queried by s_{i−1}. Both variants have the same
    parameters apart from the attention module. Encoder and decoder use torch's fused ``nn.GRU``/``nn.LSTM``.

    Build it from a :class:`Seq2SeqRNNConfig` (``Seq2SeqRNN(config)``, ``Seq2SeqRNN(config, cell="lstm")`` for a
    changed copy) or from the config's fields as arguments, as always (``Seq2SeqRNN(V_src, V_tgt, 64, 128,
    attention="bahdanau")``); ``model.config`` is the config.

    Args (the config's fields):
        src_vocab_size, tgt_vocab_size: V of each side.
        emb_dim: embedding width.
        hidden_size: H_hid of encoder and decoder.
        cell: "gru" or "lstm".
        pad_id: padding id in both vocabularies (its embeddings are zero and untrained).
        attention: None or "bahdanau".
        attn_dim: width of the additive-attention layer (default ``hidden_size``).

    Raises:
        TypeError: a size is not an int.
        ValueError: a size below 1, or a bad ``cell``, ``attention`` or ``pad_id``.

    Sources: Cho et al. 2014, §2; Sutskever, Vinyals & Le 2014, §2; Bahdanau, Cho & Bengio 2015, §3.
    """

    def __init__(self, *args: Any, **settings: Any) -> None:
        super().__init__()
        if args and isinstance(args[0], Seq2SeqRNNConfig):
            if len(args) > 1:
                raise TypeError(f"config: expected one Seq2SeqRNNConfig (and keyword changes), got {len(args)} "
                                "positional arguments")
            config = dataclasses.replace(args[0], **settings) if settings else args[0]
        else:
            config = Seq2SeqRNNConfig(*args, **settings)
        self.config = config
        cell, pad_id, hidden_size, emb_dim = config.cell, config.pad_id, config.hidden_size, config.emb_dim
        src_vocab_size, tgt_vocab_size, attention = config.src_vocab_size, config.tgt_vocab_size, config.attention
        attn_dim = config.attn_dim
        self.cell = cell
        self.src_vocab_size, self.tgt_vocab_size = src_vocab_size, tgt_vocab_size
        self.pad_id = pad_id
        self.hidden_size = hidden_size
        rnn_cls = nn.GRU if cell == "gru" else nn.LSTM
        self.src_embedding = nn.Embedding(src_vocab_size, emb_dim, padding_idx=pad_id)
        self.tgt_embedding = nn.Embedding(tgt_vocab_size, emb_dim, padding_idx=pad_id)
        self.encoder = rnn_cls(emb_dim, hidden_size, batch_first=True)
        self.decoder = rnn_cls(emb_dim + hidden_size, hidden_size, batch_first=True)
        self.attention = (
            BahdanauAttention(hidden_size, hidden_size, attn_dim or hidden_size) if attention == "bahdanau" else None
        )
        self.output = nn.Linear(2 * hidden_size, tgt_vocab_size)

    # --- checks ---------------------------------------------------------------------------------------------
    @staticmethod
    def _check_ids(ids: Tensor, name: str, vocab: int, letters: str) -> None:
        check_tensor(name, ids, "int", letters, dtype=(torch.int64, torch.int32), nonempty=letters.strip("()"))
        check_ids(name, ids, vocab)

    def _source_mask(self, src: Tensor, src_mask: Tensor | None) -> Tensor:
        self._check_ids(src, "src", self.src_embedding.num_embeddings, "(B, S)")
        if src_mask is None:
            src_mask = src != self.pad_id  # (B, S), True = real token
        else:
            check_tensor("src_mask", src_mask, "bool", "(B, S)", B=src.shape[0], S=src.shape[1])
        # Value checks, kept although they read the mask back to the host: the encoder packs the rows by
        # length (pack_padded_sequence), which needs the lengths on the host anyway.
        lengths = src_mask.sum(dim=1)  # (B,)
        if bool((lengths == 0).any()):
            raise ValueError("src: expected at least one non-padding token in every row, got a row of padding")
        positions = torch.arange(src.shape[1], device=src.device)
        if not bool((src_mask == (positions < lengths[:, None])).all()):
            raise ValueError("src: expected right padding (real tokens first, then padding) in every row, got another")
        return src_mask

    # --- encoder and one decoder step -----------------------------------------------------------------------
    def encode(self, src: Tensor, src_mask: Tensor | None = None) -> tuple[Tensor, DecoderState, Tensor]:
        """Encode a right-padded source.

        Shape:
            src: (B, S) int; src_mask: optional bool (B, S), True = real token (default ``src != pad_id``).
            returns: encoder states (B, S, H_hid) (zeros at padding); the final state at each row's last real
                token, (1, B, H_hid) — a pair (h, c) for the LSTM; and the source mask (B, S).

        Raises:
            TypeError: ``src`` is not an integer tensor.
            ValueError: bad shape, ids out of range, an all-padding row, or padding before a real token.
        """
        src_mask = self._source_mask(src, src_mask)
        lengths = src_mask.sum(dim=1).cpu()  # (B,)
        packed = pack_padded_sequence(self.src_embedding(src), lengths, batch_first=True, enforce_sorted=False)
        packed_out, final = self.encoder(packed)
        enc_out, _ = pad_packed_sequence(packed_out, batch_first=True, total_length=src.shape[1])  # (B, S, H_hid)
        return enc_out, final, src_mask

    @staticmethod
    def _hidden(state: DecoderState) -> Tensor:
        h = state[0] if isinstance(state, tuple) else state  # (1, B, H_hid)
        return h[0]  # (B, H_hid)

    def _step(
        self, y_prev: Tensor, state: DecoderState, memory: tuple[Tensor, Tensor | None, Tensor, Tensor]
    ) -> tuple[Tensor, Tensor, DecoderState, Tensor | None]:
        """One decoder step: (B,) previous ids → decoder output s_i (B, H_hid), context (B, H_hid), state, α_i."""
        enc_out, keys, src_mask, fixed = memory
        weights = None
        if self.attention is None:
            context = fixed  # (B, H_hid)
        else:
            context, weights = self.attention(self._hidden(state), enc_out, src_mask, projected_keys=keys, checked=True)
        step_in = torch.cat([self.tgt_embedding(y_prev), context], dim=-1).unsqueeze(1)  # (B, 1, E + H_hid)
        out, state = self.decoder(step_in, state)
        return out[:, 0], context, state, weights

    def _memory(self, enc_out: Tensor, final: DecoderState, src_mask: Tensor) -> tuple:
        keys = None if self.attention is None else self.attention.project_keys(enc_out)  # (B, S, A)
        return enc_out, keys, src_mask, self._hidden(final)

    # --- teacher forcing and greedy decoding ----------------------------------------------------------------
    def forward(
        self, src: Tensor, tgt_in: Tensor, src_mask: Tensor | None = None, *, return_attention: bool = False
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Teacher-forced logits: position i sees the source and ``tgt_in[:, :i+1]`` only.

        ``tgt_in`` is the target shifted right (BOS first); the loss compares the logits with the unshifted
        target.

        Shape:
            src: (B, S) int, right-padded; tgt_in: (B, L) int; src_mask: optional bool (B, S).
            returns: logits (B, L, V); with ``return_attention=True`` also the weights (B, L, S), which sum to 1
                over real source tokens and are 0 on padding.

        Raises:
            TypeError: ids are not integer tensors.
            ValueError: bad shapes or ids (see :meth:`encode`); ``return_attention`` without attention.
        """
        check_flags(return_attention=return_attention)
        if return_attention and self.attention is None:
            raise ValueError("return_attention: expected False for a model built with attention=None, got True")
        enc_out, state, src_mask = self.encode(src, src_mask)
        self._check_ids(tgt_in, "tgt_in", self.tgt_embedding.num_embeddings, "(B, L)")
        if tgt_in.shape[0] != src.shape[0]:
            raise ValueError(f"tgt_in: expected batch size B={src.shape[0]} (src's), got {tgt_in.shape[0]}")
        memory = self._memory(enc_out, state, src_mask)
        L = tgt_in.shape[1]
        if self.attention is None:  # the context is the same at every step, so one fused call does them all
            context = memory[3].unsqueeze(1).expand(-1, L, -1)  # (B, L, H_hid)
            dec_in = torch.cat([self.tgt_embedding(tgt_in), context], dim=-1)  # (B, L, E + H_hid)
            outputs, _ = self.decoder(dec_in, state)  # (B, L, H_hid)
            return self.output(torch.cat([outputs, context], dim=-1))  # (B, L, V)
        outs, contexts, weights = [], [], []
        for i in range(L):
            out, context, state, w = self._step(tgt_in[:, i], state, memory)
            outs.append(out)
            contexts.append(context)
            weights.append(w)
        features = torch.cat([torch.stack(outs, 1), torch.stack(contexts, 1)], dim=-1)  # (B, L, 2·H_hid)
        logits = self.output(features)  # (B, L, V)
        return (logits, torch.stack(weights, 1)) if return_attention else logits  # weights (B, L, S)

    @torch.no_grad()
    def greedy_decode(
        self,
        src: Tensor,
        max_len: int,
        bos_id: int,
        eos_id: int,
        src_mask: Tensor | None = None,
        *,
        return_attention: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Greedy decoding, one token at a time, each row stopping at its first EOS.

        Leaves the module's train/eval mode as it is (there is no dropout). ``pad_id`` is never predicted. The
        BOS is not included; a row's EOS is; positions after a row's EOS hold ``pad_id``. Stops when every row
        has emitted EOS or after ``max_len`` tokens.

        Shape:
            src: (B, S) int, right-padded. returns: tokens (B, L_out) with L_out ≤ max_len; with
            ``return_attention=True`` also the weights (B, L_out, S) (zero rows after a row's EOS).

        Raises:
            TypeError: ``max_len``, ``bos_id`` or ``eos_id`` is not an int.
            ValueError: ``max_len`` < 1; ``bos_id`` or ``eos_id`` equal to ``pad_id`` (PAD is never decoded, and
                an EOS equal to PAD could not be told from the padding after it) or outside the target
                vocabulary ``[0, V)``; ``return_attention`` without
                attention; bad ``src`` (see :meth:`encode`).
        """
        check_flags(return_attention=return_attention)
        max_len = check_int("max_len", max_len, 1)
        check_bos_eos(bos_id, eos_id, self.pad_id, self.output.out_features)
        if return_attention and self.attention is None:
            raise ValueError("return_attention: expected False for a model built with attention=None, got True")
        enc_out, state, src_mask = self.encode(src, src_mask)
        memory = self._memory(enc_out, state, src_mask)
        B = src.shape[0]
        y = torch.full((B,), bos_id, dtype=torch.long, device=src.device)  # (B,)
        finished = torch.zeros(B, dtype=torch.bool, device=src.device)
        pad_index = torch.tensor([self.pad_id], device=src.device)
        tokens, weights = [], []
        for _ in range(max_len):
            out, context, state, w = self._step(y, state, memory)
            logits = self.output(torch.cat([out, context], dim=-1))  # (B, V)
            y = logits.index_fill(-1, pad_index, float("-inf")).argmax(dim=-1)  # (B,), never PAD
            y = y.masked_fill(finished, self.pad_id)
            if w is not None:
                weights.append(w.masked_fill(finished[:, None], 0.0))
            tokens.append(y)
            finished = finished | (y == eos_id)
            if bool(finished.all()):
                break
        result = torch.stack(tokens, dim=1)  # (B, L_out)
        return (result, torch.stack(weights, 1)) if return_attention else result  # weights (B, L_out, S)
