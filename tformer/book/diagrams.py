"""The book's architecture diagrams, drawn as SVG by code in one visual language (first shown in ``01_rnn_baselines``).

Why SVG written by code rather than matplotlib or hand-drawn files: every box, arrow and label sits on a grid we
choose, so the pictures stay crisp at any zoom, the same colours mean the same thing in every figure, and the
output is the same bytes on every machine (nbval compares a notebook's stored HTML). Latin labels are real SVG
text in DejaVu Sans (the font matplotlib ships; every character is checked against it by the tests); Chinese
labels are drawn as outlines from the book's CJK font (Noto Sans CJK SC, from ``mplfonts``), so a reader without
that font still sees 猫 and not a box.

The visual language (:data:`PALETTE`): blue = query, orange = key, green = value, magenta = residual stream,
vermilion = masked out, purple = recurrent state; grey boxes are layers that mix nothing across positions.
Arrows carry shapes in the package's dimension letters (B batch, L query length, S key length, D model width,
H heads, Dh head width, F feed-forward width; H_hid and D_in for the recurrent baselines).

In a notebook, ``show("transformer_block")`` displays a figure; it works in JupyterLab (also in an untrusted
notebook: the SVG travels as an ``<img>`` data URI, which Jupyter's sanitizer keeps), in the HTML book and on
Colab (nothing is read from a relative path). :data:`DIAGRAMS` lists the names.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["DIAGRAMS", "PALETTE", "Diagram", "diagram", "show"]

# (stroke, fill) per role; Okabe & Ito's colour-blind-safe hues for the roles that are told apart by colour.
PALETTE: dict[str, tuple[str, str]] = {
    "query": ("#0072B2", "#DCEBF7"),
    "key": ("#C77C00", "#FCEFD2"),
    "value": ("#009E73", "#D5F0E6"),
    "residual": ("#B0307A", "#F6E0EE"),
    "mask": ("#D55E00", "#F7D9C4"),
    "state": ("#6A3D9A", "#E8DDF2"),
    "attention": ("#0072B2", "#EEF4FA"),
    "layer": ("#4D4D4D", "#F0F0F0"),
    "norm": ("#4D4D4D", "#FFFFFF"),
    "cache": ("#7F7F7F", "#E6E6E6"),
    "text": ("#222222", "#FFFFFF"),
    "shape": ("#555555", "#FFFFFF"),
}
FONT = "DejaVu Sans, Verdana, Arial, Helvetica, sans-serif"
CJK_FONT_FILE = "NotoSansCJKsc-Regular.otf"


def _num(v: float) -> str:
    """Coordinates with at most one decimal, so the SVG text is short and the same on every machine."""
    r = round(v, 1)
    return str(int(r)) if r == int(r) else f"{r:.1f}"


def _is_cjk(s: str) -> bool:
    return any("\u2e80" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" or "\uff00" <= ch <= "\uffef" for ch in s)


@cache
def _cjk_font():  # -> matplotlib FontProperties, imported lazily (matplotlib is slow to import)
    from matplotlib.font_manager import FontProperties

    return FontProperties(fname=str(resources.files("mplfonts") / "fonts" / CJK_FONT_FILE))


@cache
def _cjk_outline(s: str, size: float) -> tuple[str, float]:
    """SVG path data for ``s`` drawn in Noto Sans CJK SC at ``size`` px with its baseline at y = 0; and its width."""
    from matplotlib.textpath import TextPath

    path = TextPath((0, 0), s, size=size, prop=_cjk_font())
    parts = []
    letters = {1: "M", 2: "L", 3: "Q", 4: "C"}
    for points, code in path.iter_segments(curves=True, simplify=False):
        if code == 79:  # CLOSEPOLY
            parts.append("Z")
            continue
        xy = " ".join(f"{_num(points[i])} {_num(-points[i + 1])}" for i in range(0, len(points), 2))
        parts.append(f"{letters[code]}{xy}")
    extents = path.get_extents()
    return "".join(parts), float(extents.x1)


class _Svg:
    """A tiny SVG writer: boxes, text, arrows and lines on a pixel grid; markers defined once per colour."""

    def __init__(self, width: int, height: int, title: str) -> None:
        self.width, self.height, self.title = width, height, title
        self.body: list[str] = []
        self.markers: set[str] = set()
        self.text(width / 2, 24, title, size=16, weight="bold")

    # -- primitives
    def rect(self, x: float, y: float, w: float, h: float, role: str = "layer", *, rx: float = 6,
             dash: bool = False, fill: str | None = None, width: float = 1.5) -> None:
        stroke, tint = PALETTE[role]
        extra = ' stroke-dasharray="5 3"' if dash else ""
        self.body.append(
            f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(w)}" height="{_num(h)}" rx="{_num(rx)}" '
            f'fill="{fill or tint}" stroke="{stroke}" stroke-width="{_num(width)}"{extra}/>'
        )

    def circle(self, x: float, y: float, r: float, role: str = "layer", *, fill: str | None = None) -> None:
        stroke, tint = PALETTE[role]
        self.body.append(
            f'<circle cx="{_num(x)}" cy="{_num(y)}" r="{_num(r)}" fill="{fill or tint}" stroke="{stroke}" '
            'stroke-width="1.5"/>'
        )

    def text(self, x: float, y: float, s: str, *, size: float = 13, role: str = "text", anchor: str = "middle",
             weight: str = "normal", italic: bool = False) -> None:
        colour = PALETTE[role][0]
        if _is_cjk(s):
            d, w = _cjk_outline(s, size)
            dx = {"start": 0.0, "middle": -w / 2, "end": -w}[anchor]
            self.body.append(
                f'<path transform="translate({_num(x + dx)} {_num(y)})" fill="{colour}" d="{d}"><title>'
                f"{html.escape(s)}</title></path>"
            )
            return
        style = ' font-style="italic"' if italic else ""
        bold = ' font-weight="bold"' if weight == "bold" else ""
        self.body.append(
            f'<text x="{_num(x)}" y="{_num(y)}" font-size="{_num(size)}" text-anchor="{anchor}" fill="{colour}"'
            f"{bold}{style}>{html.escape(s)}</text>"
        )

    def lines(self, *texts: str, x: float, y: float, size: float = 13, gap: float | None = None,
              **kw) -> None:
        """Several lines of text centred vertically on y."""
        gap = gap or size * 1.25
        top = y - gap * (len(texts) - 1) / 2 + size * 0.35
        for i, s in enumerate(texts):
            self.text(x, top + i * gap, s, size=size, **kw)

    def path(self, points: list[tuple[float, float]], role: str = "layer", *, arrow: bool = True,
             width: float = 1.6, dash: bool = False) -> None:
        stroke = PALETTE[role][0]
        d = " ".join(f"{'M' if i == 0 else 'L'}{_num(x)} {_num(y)}" for i, (x, y) in enumerate(points))
        end = ""
        if arrow:
            self.markers.add(role)
            end = f' marker-end="url(#arrow-{role})"'
        extra = ' stroke-dasharray="5 3"' if dash else ""
        self.body.append(
            f'<path d="{d}" fill="none" stroke="{stroke}" stroke-width="{_num(width)}" '
            f'stroke-linejoin="round"{extra}{end}/>'
        )

    def curve(self, x1: float, y1: float, x2: float, y2: float, lift: float, role: str = "layer", *,
              arrow: bool = True, width: float = 1.6) -> None:
        """A cubic arc from (x1, y1) to (x2, y2) that rises ``lift`` px above the higher end."""
        top = min(y1, y2) - lift
        end = ""
        if arrow:
            self.markers.add(role)
            end = f' marker-end="url(#arrow-{role})"'
        self.body.append(
            f'<path d="M{_num(x1)} {_num(y1)}C{_num(x1)} {_num(top)} {_num(x2)} {_num(top)} {_num(x2)} {_num(y2)}" '
            f'fill="none" stroke="{PALETTE[role][0]}" stroke-width="{_num(width)}"{end}/>'
        )

    def arrow(self, x1: float, y1: float, x2: float, y2: float, role: str = "layer", **kw) -> None:
        self.path([(x1, y1), (x2, y2)], role, **kw)

    # -- composites
    def box(self, x: float, y: float, w: float, h: float, *texts: str, role: str = "layer", size: float = 13,
            **kw) -> None:
        self.rect(x, y, w, h, role, **kw)
        self.lines(*texts, x=x + w / 2, y=y + h / 2, size=size)

    def shape(self, x: float, y: float, s: str, *, anchor: str = "start") -> None:
        """A tensor shape beside an arrow, e.g. "(B, L, D)"."""
        self.text(x, y, s, size=11, role="shape", anchor=anchor, italic=True)

    def plus(self, x: float, y: float, role: str = "residual") -> None:
        self.circle(x, y, 10, role, fill="#FFFFFF")
        self.text(x, y + 5, "+", size=16, role=role, weight="bold")

    def render(self, alt: str) -> str:
        defs = "".join(
            f'<marker id="arrow-{role}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" markerHeight="9" '
            f'markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0 0L10 5L0 10z" fill="{PALETTE[role][0]}"/></marker>'
            for role in sorted(self.markers)
        )
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" role="img" aria-labelledby="title desc" '
            f'font-family="{FONT}">'
            f'<title id="title">{html.escape(self.title)}</title><desc id="desc">{html.escape(alt)}</desc>'
            f'<defs>{defs}</defs><rect width="100%" height="100%" fill="#FFFFFF"/>'
            + "".join(self.body)
            + "</svg>"
        )


@dataclass(frozen=True)
class Diagram:
    """One figure: its name in :data:`DIAGRAMS`, title, alt text (what a reader who cannot see it needs) and SVG.

    In a notebook the object displays itself (``_repr_html_``) as an ``<img>`` whose source is the SVG as a
    base64 data URI, with ``alt`` set; ``svg`` is the document itself, with ``<title>`` and ``<desc>``.
    """

    name: str
    title: str
    alt: str
    svg: str

    @property
    def width(self) -> int:
        return int(self.svg.split('width="', 1)[1].split('"', 1)[0])

    def data_uri(self) -> str:
        return "data:image/svg+xml;base64," + base64.b64encode(self.svg.encode("utf-8")).decode("ascii")

    def _repr_html_(self) -> str:
        return (
            f'<figure class="tformer-diagram" style="margin: 0.5em 0">'
            f'<img src="{self.data_uri()}" alt="{html.escape(self.alt)}" width="{self.width}" '
            f'style="max-width: 100%; height: auto"/></figure>'
        )

    def __repr__(self) -> str:
        return f"<diagram {self.name!r}: {self.title}>"


# ---------------------------------------------------------------------------------------------------- figures


def _transformer_block() -> tuple[_Svg, str]:
    title = "The Transformer block: post-norm (2017) and pre-norm"
    s = _Svg(760, 600, title)

    def column(cx: float, pre: bool) -> None:
        stream = cx - 80  # x of the residual stream
        branch = cx + 30  # centre of the sublayer boxes
        s.text(cx, 62, "Pre-norm (GPT-2 and most LLMs)" if pre else "Post-norm (Vaswani et al. 2017)",
               size=14, weight="bold")
        s.text(cx, 80, "LayerNorm inside each branch" if pre else "LayerNorm after each residual addition",
               size=12, italic=True, role="shape")
        bottom, top = 560, 110
        s.shape(stream - 8, bottom - 2, "x  (B, L, D)", anchor="end")
        y = bottom
        for k, (label, sub) in enumerate((("Multi-head", "self-attention"), ("Feed-forward", "D → F → D"))):
            role = "attention" if k == 0 else "layer"
            y_fork = y - 25
            if pre:
                # fork off the stream, LayerNorm, sublayer, add back onto the stream
                s.path([(stream, y_fork), (branch, y_fork), (branch, y_fork - 20)], "residual")
                s.box(branch - 60, y_fork - 52, 120, 32, "LayerNorm", role="norm")
                s.arrow(branch, y_fork - 52, branch, y_fork - 70, "layer")
                s.box(branch - 70, y_fork - 120, 140, 50, label, sub, role=role)
                y_add = y_fork - 150
                s.path([(branch, y_fork - 120), (branch, y_add), (stream + 12, y_add)], "layer")
                s.arrow(stream, y, stream, y_add + 10, "residual", width=3)
                s.plus(stream, y_add)
                y = y_add - 10
            else:
                s.path([(stream, y_fork), (branch, y_fork), (branch, y_fork - 20)], "residual")
                s.box(branch - 70, y_fork - 70, 140, 50, label, sub, role=role)
                y_add = y_fork - 100
                s.path([(branch, y_fork - 70), (branch, y_add), (stream + 12, y_add)], "layer")
                s.arrow(stream, y, stream, y_add + 10, "residual", width=3)
                s.plus(stream, y_add)
                s.arrow(stream, y_add - 10, stream, y_add - 28, "residual", width=3)
                s.box(stream - 55, y_add - 60, 110, 32, "LayerNorm", role="norm")
                y = y_add - 60
        end = top + 20
        s.arrow(stream, y, stream, end, "residual", width=3)
        s.shape(stream - 8, end + 12, "(B, L, D)", anchor="end")
        if pre:
            s.shape(stream + 10, end + 12, "a final LayerNorm follows the last block")

    column(190, pre=False)
    column(570, pre=True)
    s.path([(380, 50), (380, 575)], "cache", arrow=False, width=1, dash=True)
    # legend
    s.rect(250, 578, 18, 4, "residual", fill=PALETTE["residual"][0], rx=1)
    s.text(274, 584, "residual stream: x + sublayer(x), shape (B, L, D) throughout", size=11, anchor="start")
    alt = (
        "Two Transformer blocks side by side, read bottom to top. Left, post-norm as in Vaswani et al. 2017: the "
        "input x of shape (B, L, D) goes through multi-head self-attention, is added back to x, then LayerNorm; "
        "then a feed-forward network (D to F to D), another residual addition and another LayerNorm. Right, "
        "pre-norm: each branch first applies LayerNorm, then the sublayer, and adds its output to an untouched "
        "residual stream; a final LayerNorm follows the last block. The shape stays (B, L, D) throughout."
    )
    return s, alt


def _multi_head() -> tuple[_Svg, str]:
    title = "Multi-head attention: split D into H heads of Dh, attend, merge"
    s = _Svg(910, 430, title)
    H = 4
    # input
    s.box(20, 180, 90, 60, "x", "(B, L, D)", role="layer")
    roles = ("query", "key", "value")
    names = ("Q = x W_Q", "K = x W_K", "V = x W_V")
    ys = (80, 185, 290)
    for role, name, y in zip(roles, names, ys, strict=True):
        s.path([(110, 210), (135, 210), (135, y + 25), (155, y + 25)], role)
        s.box(157, y, 110, 50, name, "(B, L, D)", role=role, size=12)
        # split: D columns cut into H slices of Dh
        x0 = 300
        s.arrow(267, y + 25, x0 - 3, y + 25, role)
        for h in range(H):
            s.rect(x0 + h * 34, y + 5, 30, 40, role, rx=3)
            s.text(x0 + h * 34 + 15, y + 30, f"h{h + 1}", size=11, role=role)
        s.path([(x0 + H * 34, y + 25), (470, y + 25), (470, 210)], role, arrow=False)
    s.text(368, 64, "split: D = H · Dh", size=12, weight="bold")
    s.shape(300, 362, "view (B, L, H, Dh)")
    s.shape(300, 377, "→ transpose (B, H, L, Dh)")
    # heads
    hx = 500
    s.arrow(470, 210, hx - 3, 210, "layer")
    for h in range(H):
        y = 105 + h * 55
        s.box(hx, y, 170, 44, f"head {h + 1}: softmax(QKᵀ/√Dh) V", role="attention", size=11)
    s.shape(hx, 345, "H heads in parallel, one batched call")
    s.shape(hx, 360, "weights (B, H, L, S), context (B, H, L, Dh)")
    # merge
    mx = 705
    s.arrow(670, 210, mx - 3, 210, "layer")
    for h in range(H):
        s.rect(mx, 150 + h * 30, 40, 26, "layer", rx=3)
        s.text(mx + 20, 168 + h * 30, f"h{h + 1}", size=11)
    s.text(mx + 20, 140, "merge", size=12, weight="bold")
    s.shape(mx - 20, 290, "transpose, concat", anchor="start")
    s.shape(mx - 20, 305, "(B, L, H · Dh) = (B, L, D)", anchor="start")
    s.arrow(745, 210, 775, 210, "layer")
    s.box(777, 180, 115, 60, "out =", "merged · W_O", "(B, L, D)", role="layer", size=12)
    s.text(450, 405, "Each head sees only its own Dh columns of Q, K and V; W_O mixes the heads back together.",
           size=12, italic=True)
    alt = (
        "Left to right: the input x of shape (B, L, D) is projected three times, into queries Q, keys K and "
        f"values V, each (B, L, D). Each is cut along D into H = {H} slices of width Dh and rearranged to "
        "(B, H, L, Dh). The H heads each compute softmax(Q K transposed over the square root of Dh) times V, "
        "in one batched call, giving weights (B, H, L, S) and a context (B, H, L, Dh). The heads are transposed "
        "back and concatenated to (B, L, H times Dh) = (B, L, D), and the output projection W_O mixes them."
    )
    return s, alt


def _qkv_dictionary() -> tuple[_Svg, str]:
    title = "Queries, keys and values: attention as a soft dictionary"
    s = _Svg(860, 420, title)
    # a hard dictionary on top
    s.text(20, 62, "A Python dict: the query matches one key exactly and returns one value.", size=13,
           anchor="start", weight="bold")
    keys = ("the", "cat", "sat", "mat")
    for i, k in enumerate(keys):
        x = 60 + i * 120
        s.box(x, 88, 56, 28, f'"{k}"', role="key", size=12)
        s.box(x + 60, 88, 46, 28, f"v{i + 1}", role="value", size=12)
    s.box(560, 88, 70, 28, '"cat"', role="query", size=12)
    s.path([(595, 88), (595, 78), (208, 78), (208, 86)], "query")
    s.text(645, 107, "d[\"cat\"] → v2 only", size=13, anchor="start")
    # the soft version
    s.text(20, 150, "Attention: the query scores every key; the softmax weights blend every value.", size=13,
           anchor="start", weight="bold")
    weights = (0.05, 0.70, 0.15, 0.10)  # illustrative, not computed
    s.box(20, 235, 80, 60, "query q", "(d_k)", role="query", size=12)
    for i, (k, w) in enumerate(zip(keys, weights, strict=True)):
        y = 170 + i * 45
        s.path([(100, 265), (115, 265), (115, y + 16), (128, y + 16)], "query", width=1.2)
        s.box(130, y, 70, 32, f"k{i + 1} ({k})", role="key", size=11)
        s.text(260, y + 21, "q·k / √d_k", size=11, role="shape", italic=True)
        s.arrow(200, y + 16, 320, y + 16, "key", width=1.2)
        # weight bar
        s.rect(325, y + 6, 120, 20, "layer", fill="#FFFFFF", rx=2)
        s.rect(325, y + 6, 120 * w, 20, "query", fill=PALETTE["query"][0], rx=2)
        s.text(455, y + 21, f"{w:.2f}", size=12, anchor="start")
        s.text(520, y + 21, "×", size=14)
        s.box(540, y, 60, 32, f"v{i + 1}", role="value", size=12)
        s.path([(600, y + 16), (640, y + 16), (640, 265), (665, 265)], "value", width=1.0 + 3 * w)
    s.text(385, 355, "softmax: weights ≥ 0, sum to 1", size=11, role="shape", italic=True)
    s.box(668, 235, 170, 60, "output = Σ wᵢ vᵢ", "mostly v2", role="value", size=12)
    s.text(430, 395, "Keys decide how much, values what. q (L, d_k), k (S, d_k), v (S, d_v), weights (L, S); "
           "illustrative weights.", size=12, italic=True)
    alt = (
        "Top: a Python dictionary with keys the, cat, sat, mat and values v1 to v4; the query cat matches one "
        "key and returns v2 only. Bottom: in attention the query q is compared with every key by a dot product "
        "scaled by the square root of d_k; a softmax turns the scores into illustrative weights 0.05, 0.70, 0.15 and 0.10 "
        "that are non-negative and sum to one; the output is the weighted sum of all four values, mostly v2."
    )
    return s, alt


def _masks() -> tuple[_Svg, str]:
    title = "Masks: True = may attend, broadcast to (B, H, L, S)"
    s = _Svg(900, 390, title)
    tokens = ("the", "cat", "sat", "on", "mat")
    padded = ("the", "cat", "sat", "<pad>", "<pad>")
    n, cell = 5, 40

    def grid(x0: float, heading: str, sub: str, allowed: Callable[[int, int], bool], keys, queries) -> None:
        s.text(x0 + n * cell / 2 + 20, 62, heading, size=14, weight="bold")
        s.text(x0 + n * cell / 2 + 20, 80, sub, size=11, role="shape", italic=True)
        gx, gy = x0 + 45, 130
        for j, k in enumerate(keys):
            s.text(gx + j * cell + cell / 2, gy - 8, k, size=10 if len(k) < 5 else 9)
        for i, q in enumerate(queries):
            s.text(gx - 6, gy + i * cell + cell / 2 + 4, q, size=10, anchor="end")
            for j in range(n):
                ok = allowed(i, j)
                s.rect(gx + j * cell, gy + i * cell, cell, cell, "value" if ok else "mask", rx=0, width=1)
                s.text(gx + j * cell + cell / 2, gy + i * cell + cell / 2 + 4, "✓" if ok else "✗", size=12,
                       role="value" if ok else "mask")
        s.text(gx + n * cell / 2, gy + n * cell + 20, "key position (S)", size=11, role="shape")
        s.text(gx - 40, gy - 8, "query ↓", size=10, role="shape")

    grid(20, "Causal mask", "causal_mask(L, S): query i sees keys ≤ i", lambda i, j: j <= i, tokens, tokens)
    grid(320, "Padding mask", "from the keys: (B, S) → (B, 1, 1, S)", lambda i, j: j < 3, padded, padded)
    grid(620, "Both (decoder on a padded batch)", "causal AND padding", lambda i, j: j <= i and j < 3,
         padded, padded)
    s.rect(250, 352, 16, 16, "value", rx=0, width=1)
    s.text(272, 365, "True: may attend", size=12, anchor="start")
    s.rect(430, 352, 16, 16, "mask", rx=0, width=1)
    s.text(452, 365, "False: score set to −inf, weight 0", size=12, anchor="start")
    alt = (
        "Three 5 by 5 grids, rows are queries and columns keys. Causal mask: query i may attend to keys 1 to i, "
        "so the allowed cells form the lower triangle including the diagonal. Padding mask: for the sentence "
        "the cat sat followed by two pad tokens, the two pad columns are masked for every query. Both: the "
        "intersection, the lower triangle without the pad columns. Allowed cells are green and marked true; "
        "masked cells are vermilion, their scores set to minus infinity so their weights are zero."
    )
    return s, alt


def _unrolled_rnn() -> tuple[_Svg, str]:
    title = "A recurrent network, folded and unrolled over time"
    s = _Svg(880, 340, title)
    # folded: one cell whose state loops back
    s.box(40, 140, 110, 60, "RNN cell", role="state")
    s.path([(150, 160), (185, 160), (185, 105), (95, 105), (95, 137)], "state")
    s.text(140, 97, "hₜ₋₁", size=12, role="state")
    s.arrow(95, 260, 95, 202, "layer")
    s.text(95, 280, "xₜ", size=13)
    s.text(210, 178, "=", size=28)
    tokens = ("the", "cat", "sat", "on")
    x0, step = 310, 140
    s.text(x0 - 68, 175, "h₀ = 0", size=12, anchor="start", role="state")
    subs = "₁₂₃₄"
    for t, tok in enumerate(tokens):
        x = x0 + t * step
        s.box(x, 140, 90, 60, "cell", role="state", size=12)
        s.arrow(x + 45, 262, x + 45, 202, "layer")
        s.text(x + 45, 280, f'"{tok}"', size=13)
        s.shape(x + 50, 240, f"x{subs[t]} (B, D_in)")
        s.arrow(x + 45, 140, x + 45, 100, "state")
        s.text(x + 45, 92, f"h{subs[t]}", size=13, role="state")
        s.arrow(x - (step - 90) if t else x0 - 24, 170, x - 2, 170, "state", width=2.5)
    s.shape(x0 + 100, 160, "(B, H_hid)")
    s.text(440, 312, "Every cell applies hₜ = tanh(W xₜ + U hₜ₋₁ + b) with the same W, U, b;", size=12,
           italic=True)
    s.text(440, 329, "step t must wait for step t − 1.", size=12, italic=True)
    alt = (
        "Left: an RNN cell whose output state loops back into itself, with input x_t. Right, the same cell "
        "unrolled over the four tokens the, cat, sat, on: starting from h0 = 0, each step computes "
        "h_t = tanh(W x_t + U h_(t-1) + b) from its token's vector x_t of shape (B, D_in) and the previous "
        "state of shape (B, H_hid), and passes h_t to the next step. The same weights are used at every "
        "step, and step t waits for step t - 1."
    )
    return s, alt


def _seq2seq(attention: bool) -> tuple[_Svg, str]:
    src = ("the", "cat", "sat", "on", "the", "mat")
    tgt = ("猫", "坐", "在", "垫子", "上")
    title = (
        "Encoder-decoder with attention: every step looks back at every source state"
        if attention
        else "Encoder-decoder with one context vector: the whole sentence through one bottleneck"
    )
    s = _Svg(900, 400, title)
    ex, dx, y_enc, y_dec = 30, 520, 190, 190
    step = 65
    for i, tok in enumerate(src):
        x = ex + i * step
        s.rect(x, y_enc, 50, 40, "key" if attention else "state")
        s.text(x + 25, y_enc + 25, f"h{i + 1}", size=12)
        s.arrow(x + 25, y_enc + 110, x + 25, y_enc + 42, "layer")
        s.text(x + 25, y_enc + 125, tok, size=13)
        if i:
            s.arrow(x - 20, y_enc + 20, x - 2, y_enc + 20, "state")
    s.text(ex + 2.5 * step + 25, y_enc + 150, "encoder (S source states)", size=12, role="shape", italic=True)
    last = ex + 5 * step + 50
    if not attention:
        s.box(last + 20, y_enc - 5, 60, 50, "c = h_S", role="mask", size=12)
        s.arrow(last, y_enc + 20, last + 18, y_enc + 20, "state")
        s.arrow(last + 80, y_enc + 20, dx - 2, y_enc + 20, "mask", width=3)
        s.shape(last + 15, y_enc + 68, "one vector")
        s.shape(last + 15, y_enc + 82, "(B, H_hid)")
    else:
        s.arrow(last, y_enc + 20, dx - 2, y_enc + 20, "state")
    for j, tok in enumerate(tgt):
        x = dx + j * step
        s.rect(x, y_dec, 50, 40, "query" if attention else "state")
        s.text(x + 25, y_dec + 25, f"s{j + 1}", size=12)
        s.arrow(x + 25, y_dec, x + 25, y_dec - 78, "layer")
        s.text(x + 25, y_dec - 88, tok, size=15)
        if j:
            s.arrow(x - 20, y_dec + 20, x - 2, y_dec + 20, "state")
            s.text(x + 25, y_dec + 125, tgt[j - 1], size=13)
            s.arrow(x + 25, y_dec + 110, x + 25, y_dec + 42, "layer")
        else:
            s.text(x + 25, y_dec + 125, "<bos>", size=12)
            s.arrow(x + 25, y_dec + 110, x + 25, y_dec + 42, "layer")
    s.text(dx + 2 * step + 25, y_dec + 150, "decoder (L target steps, fed the previous word)", size=12,
           role="shape", italic=True)
    if attention:
        # the third decoder step attends to every source state
        qx = dx + 2 * step + 25
        weights = (0.05, 0.10, 0.70, 0.05, 0.02, 0.08)
        for i, w in enumerate(weights):
            kx = ex + i * step + 25
            s.curve(kx, y_enc - 1, qx - 12 + 4 * i, y_dec - 1, 60 - 5 * i, "value", arrow=False, width=0.6 + 6 * w)
            s.text(kx + 5, y_enc - 6, f"{w:.2f}", size=10, role="value", anchor="start")
        s.text(ex + 2.5 * step + 25, 112, "attention weights of decoder step 3 over h1…h6", size=11,
               role="shape", italic=True)
        s.text(ex + 2.5 * step + 25, 126, "(one row of the (B, L, S) weights)", size=11, role="shape",
               italic=True)
        s.text(450, 385, "Decoder step 3 puts most weight on 'sat'; each target step builds its own context "
               "from all S states.", size=12, italic=True)
    else:
        s.text(450, 385, "The decoder sees the source only through c, one vector however long the sentence.",
               size=12, italic=True)
    alt = (
        "An encoder reads the source the cat sat on the mat one word at a time into states h1 to h6; a decoder "
        "then writes 猫 坐 在 垫子 上, one word per step, each step fed the previous word. "
        + (
            "With attention, every decoder step compares its state (the query) with all six encoder states "
            "(the keys) and takes a weighted average of them (the values); the picture highlights step 3, "
            "whose heaviest weight is on sat."
            if attention
            else "Without attention, only the last encoder state, one vector c, is handed to the decoder: the "
            "whole sentence has to pass through it."
        )
    )
    return s, alt


def _kv_cache() -> tuple[_Svg, str]:
    title = "The key/value cache: each decoding step computes one new key and value"
    s = _Svg(880, 360, title)
    steps = 4
    for t in range(steps):
        y = 60 + t * 62
        s.text(20, y + 27, f"step {t + 1}", size=12, anchor="start", weight="bold")
        for j in range(t + 1):
            x = 110 + j * 58
            new = j == t
            s.rect(x, y + 8, 26, 28, "key", dash=not new, fill=None if new else PALETTE["cache"][1])
            s.text(x + 13, y + 27, f"k{j + 1}", size=10)
            s.rect(x + 28, y + 8, 26, 28, "value", dash=not new, fill=None if new else PALETTE["cache"][1])
            s.text(x + 41, y + 27, f"v{j + 1}", size=10)
        qx = 110 + (t + 1) * 58 + 30
        s.box(qx, y + 8, 40, 28, f"q{t + 1}", role="query", size=11)
        s.arrow(qx + 40, y + 22, 430, y + 22, "query")
        s.box(432, y + 6, 200, 32, "attend: (B, H, 1, t) weights", role="attention", size=11)
        s.arrow(632, y + 22, 660, y + 22, "layer")
        s.text(665, y + 27, f"next token {t + 2}", size=12, anchor="start")
    s.rect(110, 318, 26, 18, "key", dash=True, fill=PALETTE["cache"][1])
    s.text(142, 332, "read from the cache (B, H, t−1, Dh)", size=11, anchor="start")
    s.rect(420, 318, 26, 18, "key")
    s.text(452, 332, "computed this step (B, H, 1, Dh), then appended", size=11, anchor="start")
    alt = (
        "Four decoding steps, one row each. At step t only the new token's query, key and value are computed; "
        "the keys and values of the t - 1 earlier tokens are read from the cache (drawn dashed and grey) and "
        "the new ones are appended. The single query attends over all t keys, giving weights of shape "
        "(B, H, 1, t), and the model predicts the next token. Without the cache every step would recompute "
        "keys and values for the whole prefix."
    )
    return s, alt


def _three_families() -> tuple[_Svg, str]:
    title = "Three families from one block: encoder-only, decoder-only, encoder-decoder"
    s = _Svg(900, 400, title)
    cols = (
        ("Encoder-only", "understanding (BERT)", 150),
        ("Decoder-only", "generation (GPT, LLMs)", 450),
        ("Encoder-decoder", "translation, denoising (2017, T5)", 750),
    )
    for name, use, cx in cols:
        s.text(cx, 62, name, size=15, weight="bold")
        s.text(cx, 80, use, size=12, role="shape", italic=True)

    # encoder-only
    s.box(70, 150, 160, 110, "encoder", "every token sees", "every token", "× N", role="attention", size=12)
    s.arrow(150, 320, 150, 262, "layer")
    s.text(150, 338, "a sentence, some tokens <mask>", size=11)
    s.arrow(150, 148, 150, 112, "layer")
    s.text(150, 104, "a label or the masked tokens", size=11)
    # decoder-only
    s.box(370, 150, 160, 110, "decoder", "causal self-attention", "no cross-attention", "× N", role="attention",
          size=12)
    s.arrow(450, 320, 450, 262, "layer")
    s.text(450, 338, "prompt + tokens so far", size=11)
    s.arrow(450, 148, 450, 112, "layer")
    s.text(450, 104, "next token", size=11)
    # encoder-decoder
    x = 600  # the left edge of its encoder box
    s.box(x, 150, 110, 110, "encoder", "bidirectional", "× N", role="attention")
    s.box(x + 170, 150, 110, 110, "decoder", "causal +", "cross-attention", "× N", role="attention", size=12)
    s.arrow(x + 110, 205, x + 168, 205, "key")
    s.text(x + 139, 197, "K, V", size=11, role="key")
    s.arrow(x + 55, 320, x + 55, 262, "layer")
    s.text(x + 55, 338, "source tokens (S)", size=11)
    s.arrow(x + 225, 320, x + 225, 262, "layer")
    s.text(x + 225, 338, "target so far (L)", size=11)
    s.arrow(x + 225, 148, x + 225, 112, "layer")
    s.text(x + 225, 104, "next target token", size=11)
    s.text(450, 385, "Same attention, FFN, norms and residuals; what changes is the mask and whether a second "
           "stack is read.", size=12, italic=True)
    alt = (
        "Three models built from the same block. Encoder-only: one bidirectional stack that reads a sentence and "
        "predicts a label or masked tokens. Decoder-only: one causally masked stack without cross-attention that "
        "predicts the next token of a prompt. Encoder-decoder: an encoder reads the source with every token "
        "seeing every other, and a decoder generates the target with causal self-attention plus cross-attention "
        "to the encoder's output."
    )
    return s, alt


def _gqa() -> tuple[_Svg, str]:
    title = "Multi-head, grouped-query and multi-query attention: how many key/value heads"
    s = _Svg(900, 350, title)
    H = 8
    setups = (("Multi-head (MHA)", "8 query heads, 8 K/V heads", 8), ("Grouped-query (GQA)",
              "8 query heads share 2 K/V heads", 2), ("Multi-query (MQA)", "8 query heads share 1 K/V head", 1))
    for c, (name, sub, g) in enumerate(setups):
        x0 = 20 + c * 300
        s.text(x0 + 130, 62, name, size=14, weight="bold")
        s.text(x0 + 130, 80, sub, size=11, role="shape", italic=True)
        w = 30
        for h in range(H):
            s.rect(x0 + 10 + h * w, 110, w - 4, 34, "query", rx=3)
            s.text(x0 + 10 + h * w + 13, 132, f"q{h + 1}", size=9)
        per = H // g
        for k in range(g):
            left = x0 + 10 + k * per * w
            width = per * w - 4
            s.rect(left, 220, width, 26, "key", rx=3)
            s.text(left + width / 2, 237, "k" if g == 1 else f"k{k + 1}", size=10)
            s.rect(left, 250, width, 26, "value", rx=3)
            s.text(left + width / 2, 267, "v" if g == 1 else f"v{k + 1}", size=10)
            for h in range(k * per, (k + 1) * per):
                s.path([(x0 + 10 + h * w + 13, 146), (left + width / 2, 218)], "layer", arrow=False, width=1)
        s.shape(x0 + 10, 298, f"H_kv = {g}; cache per token and layer:")
        s.shape(x0 + 10, 312, f"2 · {g} · Dh numbers")
    s.text(450, 334, "H_kv K/V heads instead of H shrink the KV cache by H / H_kv; the queries keep all H heads.",
           size=12, italic=True)
    alt = (
        "Three panels with eight query heads each. In multi-head attention each query head has its own key and "
        "value head (8 K/V heads). In grouped-query attention the eight query heads are split into two groups, "
        "each group sharing one key and one value head. In multi-query attention all eight share a single key "
        "and value head. The cache per token and layer holds 2 times the number of K/V heads H_kv times Dh "
        "numbers, so it shrinks by H divided by H_kv."
    )
    return s, alt


def _lstm_cell() -> tuple[_Svg, str]:
    title = "Inside an LSTM cell: three gates and a cell-state highway"
    s = _Svg(900, 440, title)
    s.rect(110, 50, 690, 300, "state", fill="#FBF8FD")
    s.text(790, 70, "one LSTM step", size=11, role="state", anchor="end", italic=True)
    c_y, bus_y, gate_y = 110, 300, 214
    # the cell-state highway along the top: c_{t-1} -> x f -> + -> c_t
    s.text(20, c_y - 8, "cₜ₋₁", size=13, role="state", anchor="start")
    s.shape(20, c_y + 18, "(B, H_hid)")
    s.arrow(20, c_y, 248, c_y, "state", width=3)
    s.circle(260, c_y, 11, "state", fill="#FFFFFF")
    s.text(260, c_y + 5, "×", size=15, role="state", weight="bold")
    s.arrow(271, c_y, 383, c_y, "state", width=3)
    s.plus(395, c_y, role="state")
    s.arrow(405, c_y, 880, c_y, "state", width=3)
    s.text(880, c_y - 8, "cₜ", size=13, role="state", anchor="end")
    s.text(560, c_y - 8, "cell state: a sum, not a squashed product", size=11, role="shape", italic=True)
    # the input bus along the bottom: [h_{t-1}; x_t]
    s.text(20, bus_y - 8, "hₜ₋₁", size=13, role="state", anchor="start")
    s.shape(20, bus_y + 18, "(B, H_hid)")
    s.path([(20, bus_y), (600, bus_y)], "state", arrow=False, width=2)
    s.arrow(170, 400, 170, bus_y + 2, "layer")
    s.text(170, 418, "xₜ  (B, D_in)", size=12)
    s.text(380, bus_y + 22, "every gate reads [hₜ₋₁, xₜ]", size=11, role="shape", italic=True)
    gates = (("forget f", "σ", 260), ("input i", "σ", 350), ("candidate g", "tanh", 440), ("output o", "σ", 560))
    for name, fn, x in gates:
        s.arrow(x, bus_y, x, gate_y + 42, "layer")
        s.box(x - 40, gate_y, 80, 40, fn, name, role="layer" if fn == "σ" else "attention", size=11)
    # f scales the old cell
    s.arrow(260, gate_y, 260, c_y + 13, "layer")
    # i x g is written into the cell
    s.circle(395, 172, 11, "layer", fill="#FFFFFF")
    s.text(395, 177, "×", size=15, weight="bold")
    s.path([(350, gate_y), (350, 172), (382, 172)], "layer")
    s.path([(440, gate_y), (440, 172), (408, 172)], "layer")
    s.arrow(395, 161, 395, c_y + 12, "layer")
    # h_t = o x tanh(c_t)
    s.arrow(660, c_y, 660, 146, "state")
    s.box(630, 148, 60, 30, "tanh", role="attention", size=12)
    s.arrow(660, 178, 660, 221, "layer")
    s.circle(660, 234, 11, "layer", fill="#FFFFFF")
    s.text(660, 239, "×", size=15, weight="bold")
    s.path([(600, 234), (647, 234)], "layer")
    s.path([(671, 234), (740, 234), (740, bus_y), (880, bus_y)], "state", width=2)
    s.text(880, bus_y - 8, "hₜ", size=13, role="state", anchor="end")
    s.shape(880, bus_y + 18, "(B, H_hid)", anchor="end")
    s.text(450, 376, "cₜ = f ⊙ cₜ₋₁ + i ⊙ g,   hₜ = o ⊙ tanh(cₜ);   σ gives 0 to 1, tanh gives −1 to 1", size=12,
           italic=True)
    s.text(520, 418, "With f ≈ 1 and i ≈ 0 the cell copies cₜ₋₁ forward unchanged.", size=12, italic=True)
    alt = (
        "One LSTM step. Two states enter from the left: the cell state c_(t-1) along the top and the hidden state "
        "h_(t-1) along the bottom, where it is joined by the input x_t of shape (B, D_in). Four gates read "
        "h_(t-1) and x_t together: forget f, input i and output o are sigmoids between 0 and 1, the candidate g "
        "is a tanh. Along the top the old cell is multiplied by f and i times g is added, giving c_t, a sum "
        "rather than a squashed product. The new hidden state h_t is o times tanh(c_t). Both states have shape "
        "(B, H_hid)."
    )
    return s, alt


def _gru_cell() -> tuple[_Svg, str]:
    title = "Inside a GRU cell: a reset gate, an update gate, one state"
    s = _Svg(900, 440, title)
    s.rect(110, 50, 690, 300, "state", fill="#FBF8FD")
    s.text(790, 70, "one GRU step", size=11, role="state", anchor="end", italic=True)
    h_y, bus_y, gate_y = 110, 300, 214
    s.text(20, h_y - 8, "hₜ₋₁", size=13, role="state", anchor="start")
    s.shape(20, h_y + 18, "(B, H_hid)")
    s.arrow(20, h_y, 208, h_y, "state", width=3)
    s.circle(220, h_y, 11, "state", fill="#FFFFFF")
    s.text(220, h_y + 5, "×", size=15, role="state", weight="bold")
    s.arrow(231, h_y, 458, h_y, "state", width=3)
    s.plus(470, h_y, role="state")
    s.arrow(480, h_y, 880, h_y, "state", width=3)
    s.text(880, h_y - 8, "hₜ", size=13, role="state", anchor="end")
    s.shape(880, h_y + 18, "(B, H_hid)", anchor="end")
    s.text(640, h_y - 8, "one state: it is both memory and output", size=11, role="shape", italic=True)
    # h_{t-1} also feeds the gates, with x_t
    s.path([(80, h_y), (80, bus_y), (540, bus_y)], "state", arrow=False, width=2)
    s.arrow(150, 400, 150, bus_y + 2, "layer")
    s.text(150, 418, "xₜ  (B, D_in)", size=12)
    s.text(330, bus_y + 22, "every gate reads [hₜ₋₁, xₜ]", size=11, role="shape", italic=True)
    gates = (("update z", "σ", 220), ("reset r", "σ", 330), ("candidate n", "tanh", 470))
    for name, fn, x in gates:
        s.arrow(x, bus_y, x, gate_y + 42, "layer")
        w = 110 if fn == "tanh" else 80
        s.box(x - w / 2, gate_y, w, 40, fn, name, role="layer" if fn == "σ" else "attention", size=11)
    s.arrow(370, gate_y + 20, 413, gate_y + 20, "layer")
    s.text(392, gate_y - 4, "r ⊙ (U hₜ₋₁)", size=10, role="shape", italic=True)
    # z keeps the old state; 1 - z lets the candidate in
    s.arrow(220, gate_y, 220, h_y + 13, "layer")
    s.path([(220, 172), (288, 172)], "layer")
    s.box(290, 160, 56, 24, "1 − z", role="layer", size=11)
    s.path([(346, 172), (457, 172)], "layer")
    s.arrow(470, gate_y, 470, 185, "layer")
    s.circle(470, 172, 11, "layer", fill="#FFFFFF")
    s.text(470, 177, "×", size=15, weight="bold")
    s.arrow(470, 161, 470, h_y + 12, "layer")
    s.text(450, 376, "hₜ = (1 − z) ⊙ n + z ⊙ hₜ₋₁,   n = tanh(W xₜ + r ⊙ (U hₜ₋₁));   σ gives 0 to 1", size=12,
           italic=True)
    s.text(520, 418, "With z ≈ 1 the state is copied forward; r decides how much of it shapes n.", size=12,
           italic=True)
    alt = (
        "One GRU step. A single state h_(t-1) of shape (B, H_hid) enters from the left; it also joins the input "
        "x_t of shape (B, D_in) on a bus that feeds the gates. The update gate z and the reset gate r are "
        "sigmoids between 0 and 1; the candidate n is a tanh of the input plus r times the recurrent term, so r "
        "decides how much of the past shapes the candidate. Along the top the old state is multiplied by z and "
        "(1 - z) times n is added: h_t = (1 - z) n + z h_(t-1). With z near 1 the state is copied forward."
    )
    return s, alt


# Chapter 03's scores, offers @ asks for 猫 追 老鼠 ， 因为 它 饿 了; the chapter asserts that its own vectors
# give these, so the figure cannot silently disagree with the computation.
SCAN_SCORE_MIX_SCORES = (4, 0, 2, -1, -1, 2, 0, -1)


def _scan_score_mix() -> tuple[_Svg, str]:
    import math

    title = "Scan → score → mix: attention resolves a pronoun"
    s = _Svg(900, 470, title)
    tokens = ("猫", "追", "老鼠", "，", "因为", "它", "饿", "了")
    scores = SCAN_SCORE_MIX_SCORES  # what each token offers · what 它 asks for (chapter 03's vectors)
    meaning = ("cat", "chasing", "mouse", "grammar", "grammar", "grammar", "–", "grammar")
    total = sum(math.exp(v) for v in scores)
    weights = [math.exp(v) / total for v in scores]
    x0, step, bw = 215, 84, 60
    s.text(450, 46, "Who is 它 in 猫追老鼠，因为它饿了?", size=13)
    rows = (("1 · scan", "every token", 92), ("2 · score", "offer · ask", 165), ("", "then softmax: weights", 250),
            ("3 · mix", "weighted sum", 340))
    for name, sub, y in rows:
        if name:  # the softmax row belongs to step 2
            s.text(20, y - 4, name, size=14, anchor="start", weight="bold")
        s.text(20, y + 14, sub, size=11, anchor="start", role="shape", italic=True)
    zero, unit = 185, 10  # score axis: y of 0, pixels per unit
    s.path([(x0 - 10, zero), (x0 + 7 * step + bw + 10, zero)], "shape", arrow=False, width=0.8)
    base = 280  # weight bars stand on this line
    for j, (tok, v, w, m) in enumerate(zip(tokens, scores, weights, meaning, strict=True)):
        x = x0 + j * step
        cx = x + bw / 2
        s.box(x, 70, bw, 36, tok, role="query" if tok == "它" else "key", size=15)
        top = zero - max(v, 0) * unit
        s.rect(x + 15, top, bw - 30, max(abs(v) * unit, 1), "key", rx=1, fill=PALETTE["key"][0])
        label = f"{v:+d}".replace("-", "−") if v else "0"
        s.text(cx, (top - 6) if v >= 0 else zero + abs(v) * unit + 14, label, size=11)
        h = max(w * 60, 1)
        s.rect(x + 15, base - h, bw - 30, h, "query", rx=1, fill=PALETTE["query"][0])
        s.text(cx, base - h - 6, f"{w:.2f}" if w >= 0.01 else "<0.01", size=11)
        s.box(x + 4, 318, bw - 8, 30, m, role="value", size=10)
        s.path([(cx, 348), (cx, 362), (520, 380)], "value", arrow=False, width=0.8 + 5 * w)
    s.path([(x0 - 10, base), (x0 + 7 * step + bw + 10, base)], "shape", arrow=False, width=0.8)
    s.text(x0 + 5 * step + bw / 2, 122, "asks", size=11, role="query", italic=True)
    s.arrow(520, 380, 520, 392, "value", width=2)
    s.box(370, 394, 300, 40, f"它 after = {weights[0]:.2f} cat + {weights[2]:.2f} mouse + …", role="value",
          size=12)
    s.text(450, 456, "The pronoun's new vector is mostly cat: the score gap of 2 became a weight ratio of e².",
           size=12, italic=True)
    alt = (
        "The sentence 猫 追 老鼠 ， 因为 它 饿 了 (the cat chases the mouse, because it is hungry), read for the "
        "pronoun 它. Scan: 它 looks at all eight tokens. Score: a dot product of what 它 asks for with what each "
        "token offers gives 4 for 猫, 2 for 老鼠 and for 它 itself, 0 for 追 and 饿, and -1 for the function "
        f"words. Softmax: the weights are {weights[0]:.2f} for 猫, {weights[2]:.2f} for 老鼠 and small elsewhere, "
        "all non-negative and summing to one. Mix: the new vector for 它 is the weighted sum of the tokens' "
        "values, mostly cat."
    )
    return s, alt


def _two_storey() -> tuple[_Svg, str]:
    title = "The Transformer as a two-storey building: a reading team and a writing team"
    s = _Svg(900, 470, title)
    s.rect(15, 45, 870, 170, "query", fill="#F4F8FC", rx=10)
    s.rect(15, 235, 870, 185, "key", fill="#FEF8EC", rx=10)
    s.text(30, 203, "Upstairs · the writing team (decoder)", size=13, anchor="start", weight="bold", role="query")
    s.text(30, 258, "Downstairs · the reading team (encoder)", size=13, anchor="start", weight="bold", role="key")
    up, down = 95, 280  # top of the box rows
    # downstairs: source -> badges and seats -> meeting rooms x N -> filing cabinet
    s.box(30, down, 150, 70, "English source", "the cat sat", "on the mat", role="layer", size=12)
    s.box(215, down, 170, 70, "ID badge + seat", "(embedding +", "positions)", role="layer", size=12)
    s.box(420, down, 190, 70, "meeting room × N", "all read at once, talk", "(self-attention, FFN)", role="attention",
          size=12)
    s.box(645, down, 215, 70, "filing cabinet: memory", "one page of notes per word,", "all kept: (B, S, D)",
          role="key", size=12)
    for x1, x2 in ((180, 213), (385, 418), (610, 643)):
        s.arrow(x1, down + 35, x2, down + 35, "layer")
    # upstairs: written so far -> badges -> writing rooms x N -> guess the next word
    s.box(30, up, 150, 70, "written so far", "猫 坐 在", role="layer", size=12)
    s.box(215, up, 170, 70, "ID badge + seat", "(embedding +", "positions)", role="layer", size=12)
    s.box(420, up, 190, 70, "writing room × N", "meet, no peeking ahead;", "then consult downstairs", role="attention",
          size=12)
    s.box(645, up, 130, 70, "guess the", "next word", "(Linear, softmax)", role="layer", size=12)
    s.box(800, up + 15, 60, 40, "垫子", role="query", size=15)
    for x1, x2 in ((180, 213), (385, 418), (610, 643), (775, 798)):
        s.arrow(x1, up + 35, x2, up + 35, "layer")
    # cross-attention: every writing room reads the cabinet
    s.path([(752, down), (752, 228), (560, 228), (560, up + 72)], "key", width=2.5, dash=True)
    s.text(550, 229, "cross-attention: K, V from the cabinet, in every writing room", size=11, role="key",
           anchor="end", italic=True)
    # autoregression: the word written is appended
    s.path([(830, up + 15), (830, 68), (105, 68), (105, up - 2)], "query", dash=True)
    s.text(450, 62, "the word written is appended and the next step begins (one word per step)", size=11,
           role="query", italic=True)
    s.text(450, 440, "Nothing is squeezed into one vector: the cabinet keeps one page per source word, and every",
           size=12, italic=True)
    s.text(450, 458, "writing room reads all of them, unlike chapter 02's single context vector.", size=12,
           italic=True)
    alt = (
        "A two-storey building. Downstairs, the reading team (the encoder): the English source the cat sat on "
        "the mat gets ID badges and seat numbers (embeddings and positions), then passes through N meeting rooms "
        "where all words are read at once and talk to each other (self-attention and the feed-forward network), "
        "and ends in a filing cabinet that keeps one page of notes per word, the memory of shape (B, S, D). "
        "Upstairs, the writing team (the decoder) takes the Chinese written so far, 猫 坐 在, through its own "
        "badges and N writing rooms, where it meets without peeking ahead and then consults the cabinet "
        "downstairs (cross-attention), and guesses the next word, 垫子, which is appended for the next step."
    )
    return s, alt


def _encoder_decoder_base() -> tuple[_Svg, str]:
    title = "The full encoder-decoder at base size (Vaswani et al. 2017, Figure 1)"
    s = _Svg(900, 660, title)
    N, D, H, F = 6, 512, 8, 2048
    s.text(450, 46, f"base: N = {N} layers each side, D = {D}, H = {H} heads of Dh = {D // H}, F = {F}; post-norm",
           size=12, role="shape", italic=True)
    ex, dx, w = 230, 670, 220  # column centres, box width

    def column_foot(cx: float, tokens: str, shape: str) -> None:
        s.text(cx, 640, tokens, size=12)
        s.arrow(cx, 626, cx, 592, "layer")
        s.box(cx - w / 2, 555, w, 36, "embedding × √D + positions", role="layer", size=12)
        s.arrow(cx, 555, cx, 523, "residual", width=2.5)
        s.shape(cx + 6, 542, shape)

    def add_norm(cx: float, y: float) -> None:
        s.box(cx - 70, y, 140, 22, "Add & LayerNorm", role="norm", size=11)

    # encoder
    s.text(ex, 76, "Encoder: reads the source", size=14, weight="bold")
    column_foot(ex, "source tokens (B, S)", f"(B, S, {D})")
    s.rect(ex - w / 2 - 20, 355, w + 40, 176, "cache", dash=True, fill="#FAFAFA")
    s.text(ex - w / 2 - 26, 370, f"× {N}", size=14, anchor="end", weight="bold")
    s.box(ex - w / 2, 480, w, 40, "multi-head self-attention", f"H = {H}, every token sees every token",
          role="attention", size=11)
    s.arrow(ex, 480, ex, 474, "layer")
    add_norm(ex, 451)
    s.arrow(ex, 451, ex, 442, "layer")
    s.box(ex - w / 2, 402, w, 38, "feed-forward", f"{D} → {F} → {D}", role="layer", size=11)
    s.arrow(ex, 402, ex, 394, "layer")
    add_norm(ex, 371)
    s.arrow(ex, 355, ex, 322, "residual", width=2.5)
    s.text(ex, 314, f"memory (B, S, {D})", size=12, weight="bold")
    # decoder
    s.text(dx, 76, "Decoder: writes the target", size=14, weight="bold")
    column_foot(dx, "target shifted right (B, L)", f"(B, L, {D})")
    s.rect(dx - w / 2 - 20, 250, w + 40, 281, "cache", dash=True, fill="#FAFAFA")
    s.text(dx + w / 2 + 26, 265, f"× {N}", size=14, anchor="start", weight="bold")
    s.box(dx - w / 2, 480, w, 40, "masked multi-head self-attention", "causal: no peeking ahead", role="attention",
          size=11)
    s.arrow(dx, 480, dx, 474, "layer")
    add_norm(dx, 451)
    s.arrow(dx, 451, dx, 429, "layer")
    s.box(dx - w / 2, 387, w, 40, "multi-head cross-attention", "Q from here; K, V from memory", role="key", size=11)
    s.arrow(dx, 387, dx, 381, "layer")
    add_norm(dx, 358)
    s.arrow(dx, 358, dx, 340, "layer")
    s.box(dx - w / 2, 300, w, 38, "feed-forward", f"{D} → {F} → {D}", role="layer", size=11)
    s.arrow(dx, 300, dx, 294, "layer")
    add_norm(dx, 271)
    s.arrow(dx, 250, dx, 232, "residual", width=2.5)
    s.box(dx - w / 2, 196, w, 34, "Linear D → V", role="layer", size=12)
    s.arrow(dx, 196, dx, 178, "layer")
    s.box(dx - w / 2, 142, w, 34, "softmax", role="layer", size=12)
    s.arrow(dx, 142, dx, 122, "layer")
    s.text(dx, 112, "next-token probabilities (B, L, V)", size=12, weight="bold")
    # memory feeds every decoder layer's cross-attention
    s.path([(ex, 300), (ex, 280), (470, 280), (470, 407), (dx - w / 2 - 2, 407)], "key", width=2.5)
    s.text(462, 332, "K, V for the cross-attention", size=11, role="key", anchor="end", italic=True)
    s.text(462, 346, f"of all {N} decoder layers", size=11, role="key", anchor="end", italic=True)
    s.text(ex, 190, "Each sublayer is wrapped as", size=12, italic=True, role="shape")
    s.text(ex, 208, "LayerNorm(x + Sublayer(x));", size=12, italic=True, role="shape")
    s.text(ex, 226, "the shape stays (B, ·, D) throughout.", size=12, italic=True, role="shape")
    alt = (
        f"The Transformer of Vaswani et al. 2017 at base size: N = {N} layers on each side, D = {D}, H = {H} heads "
        f"of Dh = {D // H}, feed-forward width F = {F}. Left, the encoder: source tokens of shape (B, S) are "
        "embedded, scaled by the square root of D and given positions, then pass through N layers of "
        "multi-head self-attention and a feed-forward network, each followed by a residual addition and "
        f"LayerNorm, giving the memory of shape (B, S, {D}). Right, the decoder: the target shifted right, "
        "(B, L), is embedded the same way and passes through N layers of masked (causal) self-attention, "
        "cross-attention whose keys and values come from the memory, and a feed-forward network, each with "
        "Add and LayerNorm; a final linear layer to the vocabulary and a softmax give next-token probabilities "
        "of shape (B, L, V)."
    )
    return s, alt


# Chapter 05's example: the keys, values and query of 猫 追 老鼠 它 (the chapter asserts that its tensors are these,
# so the figures cannot silently disagree with the computation), and three more queries drawn only in the QKᵀ grid.
FIVE_STEPS_TOKENS = ("猫", "追", "老鼠", "它")
FIVE_STEPS_KEYS = ((1.0, 0.0), (0.0, 1.0), (0.7, 0.7), (1.0, 0.0))
FIVE_STEPS_VALUES = ((2.0, 1.0), (0.0, 3.0), (1.0, 2.0), (0.0, 0.0))
FIVE_STEPS_QUERY = (1.0, 0.0)  # 它 looks for an animal
QK_GRID_QUERIES = ((0.0, 1.0), (1.0, 1.0), (-1.0, 1.0), FIVE_STEPS_QUERY)  # illustrative, except 它's


def _dot(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _vec(v: tuple[float, ...], fmt: str = "g") -> str:
    return "[" + ", ".join(f"{x:{fmt}}".replace("-", "−") for x in v) + "]"


def _five_steps() -> tuple[_Svg, str]:
    import math

    title = "Attention for one query in five steps: score, scale, exponentiate, normalise, mix"
    s = _Svg(920, 450, title)
    tokens, keys, values, q = FIVE_STEPS_TOKENS, FIVE_STEPS_KEYS, FIVE_STEPS_VALUES, FIVE_STEPS_QUERY
    d_k = len(q)
    scores = [_dot(q, k) for k in keys]
    scaled = [v / math.sqrt(d_k) for v in scores]
    exps = [math.exp(v) for v in scaled]
    total = sum(exps)
    weights = [e / total for e in exps]
    out = tuple(sum(w * v[i] for w, v in zip(weights, values, strict=True)) for i in range(2))
    s.text(460, 46, f"The query of 它 is q = {_vec(q)}, \u201cI am looking for an animal\u201d; keys have d_k = {d_k} "
           f"numbers, values d_v = {len(values[0])}.", size=12, role="shape", italic=True)
    # the pipeline of steps, as a header row of boxes joined by arrows
    steps = (("1 · score", "q · k", 185, 115, "key"), ("2 · scale", f"÷ √d_k = ÷ √{d_k}", 320, 105, "layer"),
             ("3 · exponentiate", "e^(scaled)", 445, 115, "layer"), ("4 · normalise", "÷ sum: the weight", 580, 130,
                                                                      "query"),
             ("5 · mix", "weight × value", 730, 170, "value"))
    for k, (name, sub, x, w, role) in enumerate(steps):
        s.box(x, 64, w, 42, name, sub, role=role, size=12)
        if k:
            prev_x, prev_w = steps[k - 1][2], steps[k - 1][3]
            s.arrow(prev_x + prev_w, 85, x - 2, 85, "layer")
    s.box(20, 64, 145, 42, "token and its key k", role="key", size=12)
    s.arrow(165, 85, 183, 85, "layer")
    y0, row = 122, 58
    for j, (tok, k, v) in enumerate(zip(tokens, keys, values, strict=True)):
        y = y0 + j * row
        cy = y + row / 2
        if j % 2 == 0:
            s.rect(12, y + 2, 896, row - 4, "layer", fill="#FAFAFA", width=0.3, rx=3)
        s.text(38, cy + 6, tok, size=17, role="query" if tok == "它" else "key")
        s.text(70, cy + 4, f"k = {_vec(k)}", size=12, anchor="start")
        # 1: the dot product, with an orange bar
        s.text(190, cy - 5, f"{q[0]:g}×{k[0]:g} + {q[1]:g}×{k[1]:g}", size=10, anchor="start", role="shape")
        s.text(190, cy + 14, f"= {scores[j]:.1f}", size=13, anchor="start", weight="bold")
        s.rect(240, cy + 4, max(60 * scores[j], 1), 12, "key", rx=1, fill=PALETTE["key"][0])
        # 2: scaled
        s.text(372, cy + 5, f"{scaled[j]:.3f}", size=13)
        # 3: exponentiated, with a grey bar
        s.text(450, cy + 5, f"{exps[j]:.3f}", size=13, anchor="start")
        s.rect(495, cy - 6, 22 * exps[j], 12, "layer", rx=1, fill="#9A9A9A")
        # 4: the weight, with a blue bar
        s.text(585, cy + 5, f"{weights[j]:.4f}", size=13, anchor="start", weight="bold")
        s.rect(640, cy - 6, 200 * weights[j], 12, "query", rx=1, fill=PALETTE["query"][0])
        # 5: weight times value
        part = tuple(weights[j] * x for x in v)
        s.text(735, cy - 5, f"{weights[j]:.4f} × {_vec(v)}", size=11, anchor="start", role="value")
        s.text(735, cy + 14, f"= {_vec(part, '.4f')}", size=12, anchor="start", role="value", weight="bold")
    bottom = y0 + 4 * row
    s.text(445, bottom + 22, f"sum = {total:.3f}", size=12, anchor="start", weight="bold")
    s.text(585, bottom + 22, f"each exp ÷ {total:.3f};", size=12, anchor="start", role="query")
    s.text(585, bottom + 40, f"the weights sum to {sum(weights):.0f}", size=12, anchor="start", role="query")
    s.rect(730, bottom + 6, 170, 54, "value")
    s.text(815, bottom + 27, "output for 它 = sum:", size=12, weight="bold", role="value")
    s.text(815, bottom + 48, _vec(out, ".4f"), size=14, weight="bold", role="value")
    s.text(460, bottom + 80, "Steps 3 and 4 are the softmax. 它 started with the value [0, 0]; 猫's value "
           "contributes most (它's weight ties 猫's, but its value is [0, 0]).", size=12, italic=True)
    alt = (
        f"The five steps of attention for the token 它 in 猫 追 老鼠 它, one row per token, left to right. The query "
        f"of 它 is [1, 0]. Step 1, score: the dot product of the query with each key gives "
        f"{', '.join(f'{v:.1f}' for v in scores)} for 猫, 追, 老鼠 and 它. Step 2, scale: divided by the square "
        f"root of d_k = 2 they become {', '.join(f'{v:.3f}' for v in scaled)}. Step 3, exponentiate: "
        f"{', '.join(f'{v:.3f}' for v in exps)}, summing to {total:.3f}. Step 4, normalise: each divided by the sum "
        f"gives the weights {', '.join(f'{v:.4f}' for v in weights)}, which add up to one. Step 5, mix: each value "
        f"is multiplied by its weight and the products are added, giving the output {_vec(out, '.4f')} for 它, "
        "which started with the value [0, 0]."
    )
    return s, alt


def _qk_grid() -> tuple[_Svg, str]:
    title = "QKᵀ: queries as rows, keys as columns, one dot product in every cell"
    s = _Svg(900, 505, title)
    tokens, keys, queries = FIVE_STEPS_TOKENS, FIVE_STEPS_KEYS, QK_GRID_QUERIES
    grid = [[_dot(q, k) for k in keys] for q in queries]
    qw, cw, ch = 58, 72, 44  # width of a Q column, width of a grid column, row height
    qx, gx, gy, ky = 200, 390, 230, 120  # left of Q, left of the grid, top of the grid and of Kᵀ
    hi_row, hi_col = 3, 2  # 它's row, 老鼠's column
    # Kᵀ above the grid: d_k rows, one column per key
    s.text(gx + 2 * cw, 70, "Kᵀ: one column per key (d_k × S)", size=13, weight="bold", role="key")
    for j, tok in enumerate(tokens):
        s.text(gx + j * cw + cw / 2, ky - 12, tok, size=15, role="key")
        for i in range(2):
            s.rect(gx + j * cw + 2, ky + i * 40 + 2, cw - 4, 36, "key", rx=3, width=2.5 if j == hi_col else 1)
            s.text(gx + j * cw + cw / 2, ky + i * 40 + 25, f"{keys[j][i]:g}", size=13)
    # Q to the left of the grid: one row per query, d_k columns
    s.text(qx + qw, gy - 32, "Q: one row per query", size=13, weight="bold", role="query")
    s.text(qx + qw, gy - 14, "(L × d_k)", size=12, role="query")
    for i, tok in enumerate(tokens):
        s.text(qx - 12, gy + i * ch + ch / 2 + 6, f"{tok} asks", size=14, role="query", anchor="end")
        for c in range(2):
            s.rect(qx + c * qw + 2, gy + i * ch + 2, qw - 4, ch - 4, "query", rx=3, width=2.5 if i == hi_row else 1)
            s.text(qx + c * qw + qw / 2, gy + i * ch + ch / 2 + 5, f"{queries[i][c]:g}".replace("-", "−"), size=13)
    # the grid of scores
    for i in range(4):
        for j in range(4):
            on = i == hi_row and j == hi_col
            s.rect(gx + j * cw, gy + i * ch, cw, ch, "attention", rx=0, width=2.5 if on else 0.8,
                   fill="#FFE08A" if on else ("#DCEBF7" if i == hi_row else "#F6FAFE"))
            s.text(gx + j * cw + cw / 2, gy + i * ch + ch / 2 + 5, f"{grid[i][j]:.1f}".replace("-", "−"), size=13,
                   weight="bold" if on else "normal")
    s.text(gx + 2 * cw, gy + 4 * ch + 24, "QKᵀ: the scores (L × S)", size=13, weight="bold")
    s.text(gx + 2 * cw, gy + 4 * ch + 42, "row i, column j = query i · key j", size=12, role="shape", italic=True)
    # the highlighted cell, worked out
    ax = gx + 4 * cw + 24
    s.text(ax, gy + 3 * ch - 26, "row 它 · column 老鼠:", size=12, anchor="start", weight="bold")
    q, k = queries[hi_row], keys[hi_col]
    s.text(ax, gy + 3 * ch - 6, f"{q[0]:g} × {k[0]:g} + {q[1]:g} × {k[1]:g} = {grid[hi_row][hi_col]:.1f}", size=12,
           anchor="start")
    s.text(ax, gy + 3 * ch + 26, "the row of 它 holds the", size=12, anchor="start", role="query")
    s.text(ax, gy + 3 * ch + 42, "four scores of step 1", size=12, anchor="start", role="query")
    s.text(450, 476, "Softmax each row (divided by √d_k first) and multiply by V: every query gets its own weighted "
           "mix.", size=12, italic=True)
    s.text(450, 495, "Only 它's query is the chapter's; the other three rows are made up for the picture.", size=11,
           italic=True, role="shape")
    alt = (
        "Matrix multiplication drawn as a grid. On the left, Q has one row per query, for 猫, 追, 老鼠 and 它, and "
        "two columns (d_k = 2); the row of 它 is [1, 0] and is outlined. Above the grid, K transposed has one column "
        "per key, for 猫, 追, 老鼠 and 它, each two numbers tall; the column of 老鼠, [0.7, 0.7], is outlined. The "
        "4 by 4 grid of scores QKᵀ has a cell for every query and key: the cell in row i and column j is the dot "
        "product of query i with key j. The highlighted cell, row 它 and column 老鼠, is 1 × 0.7 + 0 × 0.7 = 0.7, "
        "and the whole row of 它, 1.0, 0.0, 0.7, 1.0, is the four scores of step 1. The other three queries are "
        "made up for the picture. A softmax along each row and a product with V give every query its own mix."
    )
    return s, alt


# The chapters on the short road to attention (the preface's first reading path); their chips are filled.
SHORT_ROAD = ("03", "04", "05", "06", "07", "09", "10")


def _book_map() -> tuple[_Svg, str]:
    title = "A map of the book: each part labelled by the chapter that builds it"
    s = _Svg(720, 1052, title)
    s.text(360, 46, "The model reads from the bottom up; a chip names a chapter, and filled chips are the short road.",
           size=12, role="shape", italic=True)

    def chip(x: float, y: float, number: str) -> float:
        """A chapter chip with its left edge at x, centred on y; returns the x just right of it."""
        s.rect(x, y - 9, 24, 18, "text", rx=4, fill="#FFE08A" if number in SHORT_ROAD else "#FFFFFF", width=1.2)
        s.text(x + 12, y + 4, number, size=11, weight="bold")
        return x + 27

    def part(cx: float, y: float, h: float, *texts: str, role: str = "layer", chips: tuple[str, ...] = (),
             w: float = 190, size: float = 11) -> None:
        s.box(cx - w / 2, y, w, h, *texts, role=role, size=size)
        x = cx + 95 + 5
        for number in chips:
            x = chip(x, y + h / 2, number)

    # before the Transformer: the recurrent baselines
    s.text(20, 80, "Before it: recurrence", size=13, weight="bold", anchor="start")
    for x, number, texts in ((20, "01", ("RNN, LSTM, GRU: one word at a time,", "and what they forget")),
                             (370, "02", ("encoder-decoder: one context vector,", "then Bahdanau attention"))):
        s.box(x, 94, 330, 52, *texts, role="state", size=12)
        chip(x + 6, 94, number)

    ex, dx, top = 200, 520, 180  # centres of the encoder and decoder columns; y of the model's heading
    s.text(505, top, "The whole encoder-decoder, assembled and trained in", size=13, weight="bold", anchor="end")
    chip(511, top - 4, "10")
    y = top - 84  # the model's drawing below was laid out with its heading at y = 84
    s.text(ex, 118 + y, "Encoder: reads the source", size=13, weight="bold")
    s.text(dx, 118 + y, "Decoder: writes the target", size=13, weight="bold")

    # the inputs, their embeddings and positions
    for cx, tokens in ((ex, "source: the cat sat on the mat"), (dx, "written so far: 猫 坐 在")):
        s.text(cx, 690 + y, tokens, size=12)
        s.arrow(cx, 676 + y, cx, 642 + y, "layer")
        part(cx, 602 + y, 38, "embedding + positions", chips=("08",), size=12)
        s.arrow(cx, 602 + y, cx, 582 + y, "residual", width=2.5)

    # the encoder's stack of blocks
    s.rect(ex - 110, 410 + y, 260, 170, "cache", dash=True, fill="#FAFAFA")
    s.text(ex - 103, 432 + y, "× N", size=13, anchor="start", weight="bold")
    part(ex, 530 + y, 40, "multi-head self-attention", "every word sees every word", role="attention",
         chips=("06", "07"))
    s.arrow(ex, 530 + y, ex, 524 + y, "layer")
    part(ex, 502 + y, 20, "Add & Norm", role="norm", chips=("09",), w=140, size=10)
    s.arrow(ex, 502 + y, ex, 492 + y, "layer")
    part(ex, 450 + y, 40, "feed-forward network", "each word on its own", chips=("09",))
    s.arrow(ex, 450 + y, ex, 444 + y, "layer")
    part(ex, 422 + y, 20, "Add & Norm", role="norm", chips=("09",), w=140, size=10)
    # the memory: one vector per source word, read by every decoder block's cross-attention
    mx = (ex + 150 + dx - 110) / 2  # between the two stacks
    s.path([(ex, 410 + y), (ex, 345 + y), (mx, 345 + y), (mx, 470 + y), (dx - 97, 470 + y)], "key", width=2.5)
    s.text(ex - 8, 372 + y, "memory: one vector", size=11, role="key", anchor="end", italic=True)
    s.text(ex - 8, 386 + y, "per source word", size=11, role="key", anchor="end", italic=True)
    s.text(mx, 337 + y, "K, V", size=11, role="key", weight="bold")

    # the decoder's stack of blocks
    s.rect(dx - 110, 330 + y, 260, 250, "cache", dash=True, fill="#FAFAFA")
    s.text(dx - 103, 352 + y, "× N", size=13, anchor="start", weight="bold")
    part(dx, 530 + y, 40, "masked self-attention", "no peeking at later words", role="attention",
         chips=("06", "07"))
    s.arrow(dx, 530 + y, dx, 524 + y, "layer")
    part(dx, 502 + y, 20, "Add & Norm", role="norm", chips=("09",), w=140, size=10)
    s.arrow(dx, 502 + y, dx, 492 + y, "layer")
    part(dx, 450 + y, 40, "cross-attention", "Q here; K, V from the memory", role="key", chips=("06", "10"))
    s.arrow(dx, 450 + y, dx, 444 + y, "layer")
    part(dx, 422 + y, 20, "Add & Norm", role="norm", chips=("09",), w=140, size=10)
    s.arrow(dx, 422 + y, dx, 412 + y, "layer")
    part(dx, 370 + y, 40, "feed-forward network", "each word on its own", chips=("09",))
    s.arrow(dx, 370 + y, dx, 364 + y, "layer")
    part(dx, 342 + y, 20, "Add & Norm", role="norm", chips=("09",), w=140, size=10)
    s.arrow(dx, 330 + y, dx, 302 + y, "residual", width=2.5)
    part(dx, 262 + y, 38, "Linear + softmax", "a probability for every word", chips=("10",))
    s.arrow(dx, 262 + y, dx, 240 + y, "layer")
    part(dx, 190 + y, 48, "decoding: one word per step", "greedy, beam search, KV cache", role="query",
         chips=("10",))
    s.arrow(dx, 190 + y, dx, 166 + y, "query")
    s.text(dx, 156 + y, "next word: 垫子", size=13)

    # what happens inside every attention box
    s.rect(ex - 110, 140 + y, 260, 180, "attention", fill="#F6FAFE")
    s.text(ex + 20, 162 + y, "Inside every attention box", size=13, weight="bold")
    s.text(ex + 20, 188 + y, "softmax(QKᵀ / √d_k) V", size=14)
    for k, (number, line) in enumerate((("03", "a weighted average of values"), ("04", "queries, keys and values"),
                                        ("05", "the five steps by hand; why √d_k"))):
        yk = 218 + 30 * k + y
        right = chip(ex - 100, yk, number)
        s.text(right + 4, yk + 4, line, size=12, anchor="start")
    s.text(ex + 20, 308 + y, "(the attention boxes below: 06, 07, 10)", size=11, role="shape", italic=True)

    # built on the model
    band = 824
    s.text(20, band, "Built on it", size=13, weight="bold", anchor="start")
    around = (("11", "real sentences:", "read, pre-train, translate"), ("12", "three families:", "encoder-, decoder-only"),
              ("13", "costs, measured:", "O(n²·d) against O(n·d²)"), ("14", "modern variants:", "GQA, MoE, long inputs"),
              ("15", "parallelism:", "data, tensor, pipeline"), ("16", "summary:", "the models side by side"),
              ("17", "a small GPT:", "it writes poems; play with it"))
    for k, (number, head, sub) in enumerate(around):
        x, yb = 20 + 230 * (k % 3), band + 14 + 62 * (k // 3)
        s.rect(x, yb, 220, 52, "layer")
        chip(x + 6, yb + 15, number)
        s.text(x + 37, yb + 20, head, size=12, anchor="start", weight="bold")
        s.text(x + 10, yb + 42, sub, size=12, anchor="start")
    # legend
    chip(200, 1034, "03")
    s.text(228, 1038, "the short road", size=12, anchor="start")
    chip(380, 1034, "01")
    s.text(408, 1038, "the full road only", size=12, anchor="start")
    alt = (
        "A map of the book drawn over the Transformer's encoder-decoder; each part carries the number of the "
        "chapter that builds it. At the top, before the Transformer, the recurrent baselines: RNN, LSTM and GRU "
        "(chapter 01) and the encoder-decoder with one context vector, then Bahdanau attention (02). In the "
        "middle, the model, read from the bottom up. Both columns start from words (the source the cat sat on "
        "the mat; the Chinese written so far, 猫 坐 在) turned into vectors with positions, chapter 08. The "
        "encoder's repeated block holds multi-head self-attention (chapters 06 and 07), Add & Norm and a "
        "feed-forward network (chapter 09); its output, the memory of one vector per source word, feeds the "
        "cross-attention of every decoder block (chapter 10). The decoder's block holds masked self-attention "
        "(06, 07), cross-attention (06, 10) and a feed-forward network (09), each followed by Add & Norm; then a "
        "linear layer and softmax give a probability for every word, and decoding writes one word per step with "
        "greedy search, beam search and a key/value cache (10). A callout says what happens inside every "
        "attention box, softmax of Q K transposed over the square root of d_k, times V: a weighted average (03), "
        "queries, keys and values (04), the five steps by hand (05). At the bottom, what is built on the model: "
        "real sentences (11), the three families (12), costs (13), modern variants (14), parallelism (15) and "
        "the summary (16), and a small GPT that writes poems (17). Filled chips mark the short road: 03, 04, 05, 06, 07, 09, 10."
    )
    return s, alt


_BUILDERS: dict[str, Callable[[], tuple[_Svg, str]]] = {
    "transformer_block": _transformer_block,
    "multi_head": _multi_head,
    "qkv_dictionary": _qkv_dictionary,
    "masks": _masks,
    "unrolled_rnn": _unrolled_rnn,
    "lstm_cell": _lstm_cell,
    "gru_cell": _gru_cell,
    "seq2seq_bottleneck": lambda: _seq2seq(attention=False),
    "seq2seq_attention": lambda: _seq2seq(attention=True),
    "scan_score_mix": _scan_score_mix,
    "two_storey": _two_storey,
    "encoder_decoder_base": _encoder_decoder_base,
    "kv_cache": _kv_cache,
    "three_families": _three_families,
    "gqa": _gqa,
    "five_steps": _five_steps,
    "qk_grid": _qk_grid,
    "book_map": _book_map,
}
#: The names :func:`diagram` and :func:`show` accept, in the order the book meets them.
DIAGRAMS: tuple[str, ...] = tuple(_BUILDERS)


def diagram(name: str) -> Diagram:
    """Build the figure called ``name`` (one of :data:`DIAGRAMS`); the same bytes on every call.

    Raises:
        ValueError: if ``name`` is not one of :data:`DIAGRAMS`.
    """
    if name not in _BUILDERS:
        raise ValueError(f"name: expected one of {', '.join(DIAGRAMS)}, got {name!r}")
    svg, alt = _BUILDERS[name]()
    return Diagram(name=name, title=svg.title, alt=alt, svg=svg.render(alt))


def show(name: str) -> None:
    """Display the figure called ``name`` in the notebook (an ``<img>`` with alt text; no file is read or written).

    Raises:
        ValueError: if ``name`` is not one of :data:`DIAGRAMS`.
    """
    from IPython.display import display

    display(diagram(name))
