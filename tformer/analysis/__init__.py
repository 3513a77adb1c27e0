"""Measuring models rather than running them: cost formulas and the tools that check them (chapter 12).

- ``complexity``: FLOP and memory formulas, timers, operator counts, peak tensor bytes.
"""
