"""Data the book trains on, generated, shipped with Python or inside a pinned wheel: nothing is downloaded.

- ``text``: tokenisers, the vocabulary and its special ids, padded and bucketed batches, English prose.
- ``corpus``: the running English → Chinese example ("the cat sat on the mat" → "猫 坐 在 垫子 上").
- ``tasks``: toy tasks with known answers (copy, reverse, sort, long-range recall).
- ``extrapolation``: the look-back-k task for training short and testing long.
- ``hsk``: real graded Chinese–English sentences (``hsk-sentences-audio``, data CC-BY-SA-4.0) with pinyin.
- ``subword``: a byte-pair-encoding tokenizer trained on the corpus with ``sentencepiece``, offline.
"""
