"""Plot helpers: a Chinese-capable font and labelled attention heatmaps (first used in ``02_seq2seq_bottleneck``).

Helpers take data and return matplotlib objects; they never call ``plt.show()``. ``use_book_style()`` is the one
function that changes matplotlib's global settings, and a notebook calls it explicitly in its setup cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib import font_manager
from matplotlib.axes import Axes

from tformer._checks import check_flags

__all__ = ["CJK_FONT", "attention_heatmap", "use_book_style"]

CJK_FONT = "Noto Sans CJK SC"


def use_book_style() -> None:
    """Register Noto Sans CJK SC (shipped by the ``mplfonts`` dependency) and make it the fallback font.

    Latin text stays in DejaVu Sans; glyphs it lacks (猫 坐 在 垫子 上) fall back to Noto Sans CJK SC, so no
    "Glyph missing" warning appears on Linux, macOS or Colab. Also sets a readable default figure size and dpi.
    """
    font_file = resources.files("mplfonts") / "fonts" / "NotoSansCJKsc-Regular.otf"
    if CJK_FONT not in {f.name for f in font_manager.fontManager.ttflist}:
        font_manager.fontManager.addfont(str(font_file))
    # A list of families (not the "sans-serif" alias) is what turns on matplotlib's per-glyph fallback.
    mpl.rcParams["font.family"] = ["DejaVu Sans", CJK_FONT]
    mpl.rcParams["axes.unicode_minus"] = False
    mpl.rcParams["figure.figsize"] = (6.4, 4.0)
    mpl.rcParams["figure.dpi"] = 100


def attention_heatmap(
    weights: torch.Tensor | np.ndarray,
    query_labels: Sequence[str],
    key_labels: Sequence[str],
    *,
    title: str,
    ax: Axes | None = None,
    annotate: bool = True,
    vmax: float | None = 1.0,
) -> Axes:
    """Draw attention weights as a heatmap: rows are queries, columns are keys.

    Shape:
        weights: (L, S), a float tensor or array of probabilities.

    Args:
        query_labels: L row labels (the tokens that ask).
        key_labels: S column labels (the tokens that are looked at).
        title: the figure title (required: every figure in the book says what it shows).
        ax: draw into this Axes, or a new figure when ``None``.
        annotate: print each weight in its cell (sensible up to about 12 x 12).
        vmax: top of the colour scale; ``None`` uses the largest weight.

    Returns:
        The Axes, with a colour bar attached.

    Raises:
        ValueError: if ``weights`` is not 2-D or the label counts do not match its shape.
    """
    check_flags(annotate=annotate)
    w = weights.detach().float().cpu().numpy() if isinstance(weights, torch.Tensor) else np.asarray(weights)
    if w.ndim != 2:
        raise ValueError(f"weights: expected (L, S), got shape {w.shape}")
    if len(query_labels) != w.shape[0] or len(key_labels) != w.shape[1]:
        raise ValueError(
            f"labels: expected {w.shape[0]} query and {w.shape[1]} key labels, "
            f"got {len(query_labels)} and {len(key_labels)}"
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(0.6 * w.shape[1] + 2.5, 0.5 * w.shape[0] + 1.5))
    image = ax.imshow(w, cmap="viridis", vmin=0.0, vmax=vmax if vmax is not None else float(w.max()))
    ax.figure.colorbar(image, ax=ax, label="attention weight")
    ax.set_xticks(range(w.shape[1]), labels=list(key_labels), rotation=45, ha="right")
    ax.set_yticks(range(w.shape[0]), labels=list(query_labels))
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title)
    if annotate:
        top = vmax if vmax is not None else float(w.max())
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="black" if w[i, j] > 0.6 * top else "white")
    return ax
