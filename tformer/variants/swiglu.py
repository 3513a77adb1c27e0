"""The SwiGLU feed-forward network of today's decoders (chapter 14, via ``modern_block``).

Shazeer 2020, "GLU Variants Improve Transformer", §2 (the FFN_SwiGLU equation): a gated linear unit whose gate
is SiLU (Swish with β = 1),

    FFN_SwiGLU(x) = (SiLU(x W_1) ⊙ x W_3) W_2,

without biases. It has three weight matrices instead of the 2017 FFN's two, so at equal parameters its
hidden width is F = 2/3 · 4D instead of 4D (Shazeer 2020 reduces d_ff "by a factor of 2/3" to keep the
parameters and the computation constant). :func:`swiglu_hidden_width` rounds that width up to a multiple of ``multiple_of`` as
Llama's reference code does (meta-llama/llama, ``llama/model.py``, ``FeedForward.__init__``: ``int(2 * 4D /
3)`` rounded up to a multiple of ``ModelArgs.multiple_of = 256``), which keeps matrix shapes friendly to GPUs.
The names follow Llama's: ``w_1`` the gate, ``w_3`` the value, ``w_2`` the output projection.

Dimension letters: D ``d_model``, F the hidden width ``d_ff``; "..." any leading dimensions.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from tformer._checks import check_activation, check_flags, check_int

__all__ = ["SwiGLUFeedForward", "swiglu_hidden_width"]


def swiglu_hidden_width(d_model: int, multiple_of: int = 256) -> int:
    """The parameter-matched SwiGLU width: F = ⌊2 · 4D / 3⌋ rounded up to a multiple of ``multiple_of``.

    A SwiGLU FFN has 3·D·F weights, the 2017 FFN with F = 4D has 2·D·4D = 8D²; F = 2/3 · 4D makes them equal,
    and the rounding adds at most ``multiple_of − 1`` hidden units (3·D·(``multiple_of`` − 1) weights).
    The rule and the default 256 are Llama's (meta-llama/llama, ``llama/model.py``: ``FeedForward`` built with
    ``hidden_dim=4 * dim``, then ``int(2 * hidden_dim / 3)`` rounded up to ``multiple_of``).

    Shape:
        none: takes and returns ints (D, the multiple, and F).

    Args:
        d_model: width D ≥ 1.
        multiple_of: F is rounded up to a multiple of this, ≥ 1 (1 means no rounding).

    Returns:
        F, an int ≥ 1.

    Raises:
        TypeError: if an argument is not an int.
        ValueError: if an argument is below 1.
    """
    d_model = check_int("d_model", d_model, 1)
    multiple_of = check_int("multiple_of", multiple_of, 1)
    hidden = (2 * 4 * d_model) // 3  # ⌊2/3 · 4D⌋ ≥ 2, in integers (Llama's int(2 * 4D / 3))
    return multiple_of * -(-hidden // multiple_of)  # rounded up to a multiple


class SwiGLUFeedForward(nn.Module):
    """FFN_SwiGLU(x) = (SiLU(x W_1) ⊙ x W_3) W_2 (Shazeer 2020, §2), applied to every position alike.

    No dropout (Llama uses none); no biases unless ``bias=True`` (Shazeer 2020 writes the GLU variants
    without them). For the 2017 FFN's parameter count pass ``d_ff=swiglu_hidden_width(d_model)``.

    Args:
        d_model: input and output width D.
        d_ff: hidden width F.
        bias: whether the three linear maps have biases.

    Shape:
        ``(..., D) -> (..., D)``; the hidden activations are ``(..., F)``.

    Raises:
        TypeError: if a width is not an int; in ``forward``, if ``x`` is not a floating-point tensor of the
            parameters' dtype (autocast aside).
        ValueError: if a width is below 1; in ``forward``, if the last dimension of ``x`` is not D.
    """

    def __init__(self, d_model: int, d_ff: int, *, bias: bool = False) -> None:
        check_flags(bias=bias)
        super().__init__()
        self.d_model = check_int("d_model", d_model, 1)
        self.d_ff = check_int("d_ff", d_ff, 1)
        self.w_1 = nn.Linear(d_model, d_ff, bias=bias)  # W: the gate, through SiLU
        self.w_3 = nn.Linear(d_model, d_ff, bias=bias)  # V: the value it gates
        self.w_2 = nn.Linear(d_ff, d_model, bias=bias)  # W_2: back to D

    def forward(self, x: Tensor, *, checked: bool = False) -> Tensor:
        """Gate, multiply, project back. Shape: ``(..., D) -> (..., D)``.

        ``checked=True``: the owning module checked these inputs in this call (see :mod:`tformer._checks`).
        """
        if not checked:
            check_activation("x", x, "(..., D)", self.w_1.weight, D=self.d_model)
        hidden = F.silu(self.w_1(x)) * self.w_3(x)  # (..., F)
        return self.w_2(hidden)  # (..., D)
