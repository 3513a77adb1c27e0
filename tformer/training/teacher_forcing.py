"""Teacher forcing: the decoder input is the gold target shifted right, and the loss ignores padding.

Introduced in ``10_encoder_decoder``. During training the decoder does not read its own (possibly wrong)
predictions; it reads the correct previous tokens, all positions at once, and the causal mask stops each
position from seeing its own answer (Williams & Zipser 1989; Vaswani et al. 2017, §3.1 "offset by one").

For a target ``tgt = [y1, y2, …, yn, EOS, PAD, …]``::

    decoder input  shift_right(tgt, bos_id) = [BOS, y1, …, yn, EOS, PAD, …]   (last column dropped)
    labels         tgt                      = [y1,  y2, …, EOS, PAD, …]

so the prediction at position t is compared with the token at t, and every position whose label is PAD is
left out of the loss.

Dimension letters: B batch, L target length, V target vocabulary.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from tformer._checks import check_ids, check_int, check_number, check_tensor

__all__ = ["sequence_cross_entropy", "shift_right"]


def shift_right(tgt: Tensor, bos_id: int) -> Tensor:
    """Decoder input for teacher forcing: prepend BOS and drop the last column.

    Padding needs no special care: a padded row's input then holds its EOS and some PADs at positions whose
    labels are PAD, which :func:`sequence_cross_entropy` ignores.

    Shape:
        ``tgt (B, L) -> (B, L)``, same dtype and device.

    Raises:
        TypeError: if ``tgt`` is not an integer tensor or ``bos_id`` not an int.
        ValueError: if ``tgt`` is not 2-D.
    """
    check_tensor("tgt", tgt, "int", "(B, L)")
    bos_id = check_int("bos_id", bos_id, 0)
    bos = torch.full_like(tgt[:, :1], bos_id)  # (B, 1)
    return torch.cat([bos, tgt[:, :-1]], dim=1)  # (B, L)


def sequence_cross_entropy(
    logits: Tensor, targets: Tensor, pad_id: int, label_smoothing: float = 0.0
) -> Tensor:
    """Mean token cross-entropy in nats over the non-padding positions.

    A thin wrapper over ``torch.nn.functional.cross_entropy`` with ``ignore_index=pad_id`` (padding contributes
    nothing, not even to the denominator) and ``label_smoothing`` (Szegedy et al. 2016; the paper uses 0.1,
    Vaswani et al. 2017 §5.4). If every target is ``pad_id`` the mean is NaN, as in torch.

    Shape:
        ``logits (B, L, V)``, ``targets (B, L)`` -> scalar.

    Raises:
        TypeError: if ``logits`` is not floating point, ``targets`` not integer, ``pad_id`` not an int or
            ``label_smoothing`` not a number.
        ValueError: if the shapes do not match, a non-padding target lies outside ``[0, V)`` (checked on a
            CPU tensor, see :func:`tformer._checks.check_ids`), or ``label_smoothing`` is outside [0, 1].
    """
    check_tensor("targets", targets, "int", "(B, L)")
    B, L = targets.shape
    check_tensor("logits", logits, "float", "(B, L, V)", B=B, L=L)
    pad_id = check_int("pad_id", pad_id)
    label_smoothing = check_number("label_smoothing", label_smoothing, 0.0, 1.0)
    V = logits.shape[-1]
    check_ids("targets", targets, V, pad_id=pad_id)
    return F.cross_entropy(
        logits.reshape(-1, V),  # (B·L, V)
        targets.reshape(-1).long(),  # (B·L,)
        ignore_index=pad_id,
        label_smoothing=label_smoothing,
    )
