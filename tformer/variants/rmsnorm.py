"""Root mean square layer normalisation, the norm of today's decoders (chapter 14, via ``modern_block``).

RMSNorm (Zhang & Sennrich 2019, "Root Mean Square Layer Normalization", §4, Eq. 4) drops LayerNorm's
re-centring: it divides each vector by its root mean square and rescales by a learned gain,

    y = x / sqrt(mean(x²) + eps) · g,

with no mean subtracted and no bias added. It is what Llama, Mistral and most 2024 decoders use in place of
:class:`torch.nn.LayerNorm`. Same numbers as :class:`torch.nn.RMSNorm` (weights copied across; tests prove it).

Dimension letters: D ``d_model``; "..." any leading dimensions (for example ``(B, L)``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from tformer._checks import check_int, check_tensor, is_number

__all__ = ["RMSNorm"]


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x²) + eps) · g over the last dimension (Zhang & Sennrich 2019, §4, Eq. 4).

    It *divides* by the root mean square: for x = [1, 2, 3, 4], mean(x²) = 7.5 and y = x / √7.5 (with g = 1,
    eps → 0), a vector whose root mean square is 1.

    ``eps`` has :class:`torch.nn.RMSNorm`'s meaning: added to the mean square inside the square root, and when
    ``None`` the machine epsilon of the computation dtype (``torch.finfo(torch.float32).eps`` for float16,
    bfloat16 and float32 inputs, ``torch.finfo(torch.float64).eps`` for float64). float16 and bfloat16 inputs
    are normalised in float32 and rounded once to their dtype before the gain, as torch does. The output has
    the input's dtype, also when the gain is kept in float32 (mixed precision), as :class:`torch.nn.RMSNorm`.

    Args:
        d_model: width D of the normalised (last) dimension.
        eps: a positive finite float, or ``None`` (above). Not 0: an all-zero row (a padding position, a
            zero-initialised stream) would divide 0 by √0 and give NaN; ``None`` (the dtype's epsilon) is the
            smallest safe choice.

    Attributes:
        weight: the gain g, shape ``(D,)``, initialised to ones.

    Shape:
        ``(..., D) -> (..., D)``, the dtype of the input.

    Raises:
        TypeError: if ``d_model`` is not an int or ``eps`` not a number; in ``forward``, if ``x`` is not a
            floating-point tensor.
        ValueError: if ``d_model < 1`` or ``eps`` is not finite and ``> 0``; in ``forward``, if the last dimension of ``x`` is not D.
    """

    def __init__(self, d_model: int, eps: float | None = None) -> None:
        super().__init__()
        self.d_model = check_int("d_model", d_model, 1)
        if eps is not None:
            if not is_number(eps):
                raise TypeError(f"eps: expected a float > 0 or None, got {type(eps).__name__}")
            if not 0 < eps < math.inf:  # also refuses NaN; 0 would give NaN on an all-zero row (0 / √0)
                raise ValueError(f"eps: expected a finite float > 0 or None (0 gives NaN on an all-zero row), "
                                 f"got {eps}")
            eps = float(eps)
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # (D,)

    def forward(self, x: Tensor, *, checked: bool = False) -> Tensor:
        """Normalise ``x`` by its root mean square over the last dimension. Shape: ``(..., D) -> (..., D)``.

        ``checked=True``: the owning module checked these inputs in this call (see :mod:`tformer._checks`).
        """
        if not checked:
            check_tensor("x", x, "float", "(..., D)", D=self.d_model)  # any float dtype: computed in float32/64
        compute = torch.float64 if x.dtype == torch.float64 else torch.float32  # torch's "opmath" dtype
        eps = torch.finfo(compute).eps if self.eps is None else self.eps
        xc = x.to(compute)  # (..., D), a no-op for float32/float64
        mean_square = xc.pow(2).mean(dim=-1, keepdim=True)  # (..., 1)
        normed = (xc / torch.sqrt(mean_square + eps)).to(x.dtype)  # (..., D): divides, never multiplies
        return (normed * self.weight).to(x.dtype)  # (..., D): the input's dtype even with a float32 gain

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"
