"""Data the book trains on, all generated or shipped with Python: nothing is downloaded.

- ``text``: tokenisers, the vocabulary and its special ids, padded and bucketed batches, English prose.
- ``corpus``: the running English → Chinese example ("the cat sat on the mat" → "猫 坐 在 垫子 上").
- ``tasks``: toy tasks with known answers (copy, reverse, sort, long-range recall).
- ``extrapolation``: the look-back-k task for training short and testing long.
"""
