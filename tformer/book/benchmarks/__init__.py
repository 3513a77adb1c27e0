"""Measurements the book ships because making them takes longer than a chapter may run.

- ``hsk_translation.json``: English → Chinese on the HSK sentences (chapter 11, §4): a word-level Transformer and
  each of the paper's training tricks added alone, plus chapter 02's RNN with attention, 3 seeds each at an equal
  budget of CPU seconds, written by ``benchmarks/hsk_translation.py`` (settings, per-seed BLEU, steps, seconds,
  loss curves, test translations and the sacrebleu signature). Derived from the hsk-sentences-audio data:
  CC-BY-SA-4.0, like the sentences.
"""
