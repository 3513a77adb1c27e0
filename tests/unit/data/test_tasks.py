"""Toy tasks: copy, reverse, sort, long-range recall."""

from __future__ import annotations

import pytest

from tformer.data.tasks import (
    FIRST_SYMBOL,
    copy_task,
    long_range_recall,
    reverse_task,
    sort_task,
    task_vocab_size,
)


@pytest.mark.parametrize(
    ("task", "expected"),
    [(copy_task, lambda s: s), (reverse_task, lambda s: s[::-1]), (sort_task, sorted)],
)
def test_targets_follow_the_rule(task, expected):
    pairs = task(200, (3, 9), num_symbols=6, seed=1)
    assert len(pairs) == 200
    assert len({tuple(s) for s, _ in pairs}) == 200  # distinct sources
    for src, tgt in pairs:
        assert 3 <= len(src) <= 9
        assert tgt == list(expected(list(src)))
        assert all(FIRST_SYMBOL <= t < task_vocab_size(6) for t in src)
    assert pairs == task(200, (3, 9), num_symbols=6, seed=1)
    assert pairs != task(200, (3, 9), num_symbols=6, seed=2)


def test_held_out_sources_never_repeat_training_sources():
    train = copy_task(500, 4, num_symbols=5, seed=0)
    test = copy_task(100, 4, num_symbols=5, seed=1, exclude={tuple(s) for s, _ in train})
    assert not {tuple(s) for s, _ in train} & {tuple(s) for s, _ in test}


def test_sort_hand_example():
    # with 2 symbols and length 1 the only sources are [4] and [5]
    pairs = sort_task(2, 1, num_symbols=2)
    assert sorted(pairs) == [([4], [4]), ([5], [5])]


def test_long_range_recall():
    pairs = long_range_recall(300, distance=25, num_symbols=8, num_keys=3, seed=0)
    for src, tgt in pairs:
        assert len(src) == 26
        assert tgt == [src[0]]
        assert FIRST_SYMBOL <= src[0] < FIRST_SYMBOL + 3
        assert all(FIRST_SYMBOL <= t < FIRST_SYMBOL + 8 for t in src)
    assert {tgt[0] for _, tgt in pairs} == {4, 5, 6}
    assert long_range_recall(1, distance=0)[0][0] == long_range_recall(1, distance=0)[0][1]


def test_bad_input():
    with pytest.raises(ValueError, match="num_examples"):
        copy_task(0)
    with pytest.raises(ValueError, match="num_symbols"):
        copy_task(5, num_symbols=1)
    with pytest.raises(ValueError, match="min_len <= max_len"):
        reverse_task(5, (6, 3))
    with pytest.raises(ValueError, match="distinct sequences"):
        copy_task(10, 2, num_symbols=3)  # only 9 sequences of length 2
    with pytest.raises(ValueError, match="distance"):
        long_range_recall(5, distance=-1)
    with pytest.raises(ValueError, match="num_keys"):
        long_range_recall(5, distance=3, num_symbols=4, num_keys=5)
