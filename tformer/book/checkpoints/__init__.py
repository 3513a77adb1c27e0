"""Model weights the book ships because producing them takes longer than a chapter may run.

- ``hsk_mlm_seed{0,1,2}.pt``: encoder-only Transformers pre-trained with masked-token prediction on the Chinese
  text of the HSK training and validation sentences (chapter 11, §3), 240 s of one CPU thread each, written by
  ``benchmarks/pretrain_hsk_mlm.py`` (which records the settings, steps and losses inside each file). Derived
  from the hsk-sentences-audio data: CC-BY-SA-4.0, like the sentences.
"""
