"""Reproducibility and device helpers for the chapters: a re-export of :mod:`tformer.environment`.

The library keeps them in :mod:`tformer.environment` (the package never imports ``tformer.book``); notebooks
import them from here, as they always have.
"""

from tformer.environment import environment_report, get_device, seed_everything

__all__ = ["environment_report", "get_device", "seed_everything"]
