"""The book's own helpers: nothing here is about attention, everything here serves the notebooks.

- ``environment``: ``seed_everything`` and ``get_device``.
- ``plot``: the book's figure style (Chinese-capable font) and attention heatmaps.
- ``results``: the manifest of numbers a chapter's prose quotes.
- ``diagrams``: the architecture figures, drawn as SVG in one visual language; ``show(name)`` displays one.
- ``source``: ``show_source(obj)`` displays a package object's own code, highlighted.
- ``exercises``: self-checking exercises; their answer digests live in ``exercise_answers/``.
- ``shipped``: the trained models the book ships (``checkpoints/``), loaded ready to use.
- ``poet``: chapter 17's small GPT of Tang poems: its settings, its time-budgeted training, its validation loss.
- ``topics``: chapter 12's fine-tuning study: HSK sentences as ids and topics, one fine-tuning run, the stored grid.
- ``playground``: your own sentence through the shipped translator, its cross-attention, your own opening line
  through the shipped poet, and ipywidgets controls for both.
"""
