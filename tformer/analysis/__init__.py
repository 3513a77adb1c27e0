"""Measuring models rather than running them: cost formulas and the tools that check them (chapters 13, 15).

- ``complexity``: FLOP and memory formulas, timers, operator counts, peak tensor bytes.
- ``parallelism``: bytes per device under DDP and ZeRO-1/2/3, communication volumes, the pipeline bubble and a
  simulated pipeline schedule (chapter 15).
"""
