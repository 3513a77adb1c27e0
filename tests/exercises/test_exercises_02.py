"""Worked solutions of chapter 02's exercises: each stored digest is the digest of the right answer."""

from __future__ import annotations

import torch

from tformer.baselines.seq2seq_rnn import BahdanauAttention
from tformer.book.exercises import check


def test_02_1_shift_right() -> None:
    target = [7, 8, 9, 2]
    answer = [1, *target[:-1]]  # BOS in front, last column dropped
    assert check("02.1", answer)
    assert not check("02.1", [1, *target])  # keeping the last column is wrong
    assert not check("02.1", target)


def test_02_2_number_of_scores() -> None:
    source, target = 12, 9
    answer = source * target  # one score per (target step, source token)
    weights = BahdanauAttention(4, 4, 4)(torch.randn(1, target, 4), torch.randn(1, source, 4))[1]
    assert weights.numel() == answer
    assert check("02.2", answer)
    assert not check("02.2", source + target)


def test_02_3_attention_parameters() -> None:
    answer = 128 * 64 + 128 * 64 + 64  # W_s, W_h (no bias) and v
    assert answer == sum(p.numel() for p in BahdanauAttention(128, 128, 64).parameters())
    assert check("02.3", answer)
    assert not check("02.3", answer + 64)


def test_02_4_context_bytes() -> None:
    answer = 128 * torch.finfo(torch.float32).bits // 8
    assert answer == torch.zeros(128, dtype=torch.float32).nbytes
    assert check("02.4", answer)
    assert not check("02.4", 128)
