"""Toy sequence tasks with known answers: copy, reverse, sort, and long-range recall.

Introduced in ``01_rnn_baselines`` (long-range recall against dependency distance) and used again wherever a
model must be checked quickly (copying is the smallest task an encoder-decoder must solve).

Every task returns a list of ``(source_ids, target_ids)`` pairs of plain ``list[int]``. Symbols are the ids
``FIRST_SYMBOL ... FIRST_SYMBOL + num_symbols - 1``, i.e. they start after the special ids of
:mod:`tformer.data.text` (``PAD_ID=0, BOS_ID=1, EOS_ID=2, UNK_ID=3``), so the pairs can be padded and batched with
:class:`tformer.data.text.PairBatches` and fed to any model whose vocabulary size is :func:`task_vocab_size`.
Targets carry no ``EOS``; batching appends it.

Held-out evaluation: pass ``exclude=`` the training sources to draw test sequences that never occur in train.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection

from tformer._checks import check_int

__all__ = [
    "FIRST_SYMBOL",
    "copy_task",
    "long_range_recall",
    "reverse_task",
    "sort_task",
    "task_vocab_size",
]

FIRST_SYMBOL = 4  # ids 0-3 are PAD, BOS, EOS, UNK


def task_vocab_size(num_symbols: int) -> int:
    """The vocabulary size a model needs for a task with ``num_symbols`` symbols (specials included)."""
    return FIRST_SYMBOL + num_symbols


def _check(num_examples: int, num_symbols: int, min_len: int, max_len: int) -> None:
    num_examples = check_int("num_examples", num_examples, 1)
    num_symbols = check_int("num_symbols", num_symbols, 2)
    if not 1 <= check_int("length", min_len) <= check_int("length", max_len):
        raise ValueError(f"length: expected 1 <= min_len <= max_len, got ({min_len}, {max_len})")


def _sequence_task(
    transform: Callable[[list[int]], list[int]],
    num_examples: int,
    length: int | tuple[int, int],
    num_symbols: int,
    seed: int,
    exclude: Collection[tuple[int, ...]],
) -> list[tuple[list[int], list[int]]]:
    min_len, max_len = (length, length) if isinstance(length, int) else length
    _check(num_examples, num_symbols, min_len, max_len)
    capacity = sum(num_symbols**n for n in range(min_len, max_len + 1)) - len(exclude)
    if num_examples > capacity:
        raise ValueError(f"num_examples: expected at most the {capacity} distinct sequences available, got {num_examples}")
    rng = random.Random(check_int("seed", seed))
    seen = set(exclude)
    pairs = []
    while len(pairs) < num_examples:
        n = rng.randint(min_len, max_len)
        src = [FIRST_SYMBOL + rng.randrange(num_symbols) for _ in range(n)]
        if tuple(src) in seen:
            continue
        seen.add(tuple(src))
        pairs.append((src, transform(src)))
    return pairs


def copy_task(
    num_examples: int,
    length: int | tuple[int, int] = 10,
    *,
    num_symbols: int = 10,
    seed: int = 0,
    exclude: Collection[tuple[int, ...]] = (),
) -> list[tuple[list[int], list[int]]]:
    """Target = source. Distinct random sequences of ``length`` symbols (an int, or ``(min, max)`` inclusive).

    Args:
        num_examples: how many pairs.
        length: sequence length, or an inclusive ``(min_len, max_len)`` range.
        num_symbols: alphabet size; ids ``FIRST_SYMBOL .. FIRST_SYMBOL + num_symbols - 1``.
        seed: random seed (deterministic output).
        exclude: source sequences (as tuples) that must not be drawn, e.g. the training set's.

    Returns:
        ``[(source_ids, target_ids), ...]``, all sources distinct.

    Raises:
        ValueError: on a non-positive count, fewer than 2 symbols, a bad length range, or more examples than
            distinct sequences exist.
    """
    return _sequence_task(list, num_examples, length, num_symbols, seed, exclude)


def reverse_task(
    num_examples: int,
    length: int | tuple[int, int] = 10,
    *,
    num_symbols: int = 10,
    seed: int = 0,
    exclude: Collection[tuple[int, ...]] = (),
) -> list[tuple[list[int], list[int]]]:
    """Target = source reversed. Arguments, returns and errors as :func:`copy_task`."""
    return _sequence_task(lambda s: s[::-1], num_examples, length, num_symbols, seed, exclude)


def sort_task(
    num_examples: int,
    length: int | tuple[int, int] = 10,
    *,
    num_symbols: int = 10,
    seed: int = 0,
    exclude: Collection[tuple[int, ...]] = (),
) -> list[tuple[list[int], list[int]]]:
    """Target = source sorted ascending. Arguments, returns and errors as :func:`copy_task`."""
    return _sequence_task(sorted, num_examples, length, num_symbols, seed, exclude)


def long_range_recall(
    num_examples: int,
    distance: int,
    *,
    num_symbols: int = 10,
    num_keys: int | None = None,
    seed: int = 0,
) -> list[tuple[list[int], list[int]]]:
    """Remember the first symbol for ``distance`` steps: source ``[key, d_1, ..., d_distance]``, target ``[key]``.

    The key is one of the first ``num_keys`` symbols; the ``distance`` distractors are drawn uniformly from all
    ``num_symbols`` symbols (so they can look like keys: only the position tells which one to recall). A model
    that reads the source left to right and answers after the last token must carry the key across exactly
    ``distance`` steps: the dependency distance. Chance accuracy is ``1 / num_keys``.

    Args:
        num_examples: how many pairs (not de-duplicated; with long distances collisions are negligible).
        distance: number of distractors between the key and the end of the source, ``>= 0``.
        num_symbols: alphabet size.
        num_keys: how many symbols can be the key (default: all ``num_symbols``).
        seed: random seed.

    Returns:
        ``[(source_ids, [key_id]), ...]`` with sources of length ``distance + 1``.

    Raises:
        ValueError: if ``distance < 0``, ``num_examples < 1``, ``num_symbols < 2`` or ``num_keys`` is not in
            ``[2, num_symbols]``.
    """
    distance = check_int("distance", distance, 0)
    _check(num_examples, num_symbols, 1, 1)
    num_keys = num_symbols if num_keys is None else check_int("num_keys", num_keys, 2, num_symbols)
    rng = random.Random(check_int("seed", seed))
    pairs = []
    for _ in range(num_examples):
        key = FIRST_SYMBOL + rng.randrange(num_keys)
        distractors = [FIRST_SYMBOL + rng.randrange(num_symbols) for _ in range(distance)]
        pairs.append(([key, *distractors], [key]))
    return pairs
