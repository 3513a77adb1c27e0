"""shift_right and sequence_cross_entropy: hand-worked inputs, padding changes nothing, label smoothing."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from tformer.training.teacher_forcing import sequence_cross_entropy, shift_right

PAD, BOS, EOS = 0, 1, 2


def test_shift_right_by_hand() -> None:
    # "猫 坐 在 垫子 上 EOS" as ids 5 6 7 8 9 2, and a shorter padded row
    tgt = torch.tensor([[5, 6, 7, 8, 9, EOS], [5, 9, EOS, PAD, PAD, PAD]])
    expected = torch.tensor([[BOS, 5, 6, 7, 8, 9], [BOS, 5, 9, EOS, PAD, PAD]])
    assert torch.equal(shift_right(tgt, BOS), expected)
    assert shift_right(tgt, BOS).dtype == tgt.dtype


def _reference_loss(logits: torch.Tensor, targets: torch.Tensor, eps: float) -> torch.Tensor:
    """Label-smoothed NLL written out: (1 - ε)·(−log p_y) + ε·mean_v(−log p_v), averaged over real tokens."""
    log_p = torch.log_softmax(logits, dim=-1)  # (B, L, V)
    nll = -log_p.gather(-1, targets[..., None]).squeeze(-1)  # (B, L)
    uniform = -log_p.mean(dim=-1)  # (B, L)
    per_token = (1 - eps) * nll + eps * uniform
    real = targets != PAD
    return per_token[real].sum() / real.sum()


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_loss_matches_written_out_formula(eps: float) -> None:
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 11, dtype=torch.float64, generator=g)
    targets = torch.randint(1, 11, (3, 5), generator=g)
    targets[1, 3:] = PAD
    targets[2, 1:] = PAD
    assert_close(sequence_cross_entropy(logits, targets, PAD, eps), _reference_loss(logits, targets, eps),
                 atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_padding_changes_nothing(eps: float) -> None:
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 6, 9, dtype=torch.float64, generator=g)
    targets = torch.randint(1, 9, (2, 6), generator=g)
    targets[0, 4:] = PAD
    base = sequence_cross_entropy(logits, targets, PAD, eps)
    # an extra all-padding row with arbitrary logits
    more_logits = torch.cat([logits, 100 * torch.randn(1, 6, 9, dtype=torch.float64, generator=g)])
    more_targets = torch.cat([targets, torch.full((1, 6), PAD)])
    assert_close(sequence_cross_entropy(more_logits, more_targets, PAD, eps), base, atol=1e-12, rtol=1e-12)
    # different logits at padded positions, and zero gradient there
    changed = logits.clone()
    changed[0, 4:] = 50.0
    changed.requires_grad_()
    loss = sequence_cross_entropy(changed, targets, PAD, eps)
    assert_close(loss, base, atol=1e-12, rtol=1e-12)
    loss.backward()
    assert bool((changed.grad[0, 4:] == 0).all()) and bool((changed.grad[0, :4] != 0).any())


def test_errors_name_the_argument() -> None:
    logits, targets = torch.randn(2, 3, 5), torch.ones(2, 3, dtype=torch.long)
    with pytest.raises(TypeError, match="tgt"):
        shift_right(torch.ones(2, 3), BOS)
    with pytest.raises(ValueError, match="tgt"):
        shift_right(torch.ones(3, dtype=torch.long), BOS)
    with pytest.raises(TypeError, match="logits"):
        sequence_cross_entropy(targets[..., None].expand(2, 3, 5), targets, PAD)
    with pytest.raises(TypeError, match="targets"):
        sequence_cross_entropy(logits, targets.float(), PAD)
    with pytest.raises(ValueError, match="logits"):
        sequence_cross_entropy(logits[:, :2], targets, PAD)
    with pytest.raises(ValueError, match="label_smoothing"):
        sequence_cross_entropy(logits, targets, PAD, label_smoothing=1.5)


# --- regressions found by the hostile review ---------------------------------------------------------------


def test_cross_entropy_bad_targets_are_clear_errors() -> None:
    logits = torch.randn(1, 2, 5)
    with pytest.raises(ValueError, match=r"targets: expected ids in \[0, V=5\) \(or pad_id=0\), got min 1, max 6"):
        sequence_cross_entropy(logits, torch.tensor([[1, 6]]), pad_id=0)  # was torch's IndexError
    with pytest.raises(ValueError, match=r"got min -3"):
        sequence_cross_entropy(logits, torch.tensor([[1, -3]]), pad_id=0)
    with pytest.raises(TypeError, match=r"pad_id: expected an int, got float"):
        sequence_cross_entropy(logits, torch.tensor([[1, 2]]), pad_id=0.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"label_smoothing: expected a number, got str"):
        sequence_cross_entropy(logits, torch.tensor([[1, 2]]), 0, "0.1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"tgt: expected an integer tensor"):
        shift_right(torch.zeros(2, 2, dtype=torch.cfloat), 1)


def test_cross_entropy_accepts_int32_targets_and_out_of_vocab_pad() -> None:
    logits = torch.randn(2, 3, 5, dtype=torch.float64)
    targets = torch.tensor([[1, 2, 7], [4, 7, 7]])  # pad_id 7 lies outside the vocabulary: fine, it is ignored
    expected = torch.nn.functional.cross_entropy(logits[targets != 7], targets[targets != 7])
    assert_close(sequence_cross_entropy(logits, targets, pad_id=7), expected, atol=1e-12, rtol=0.0)
    assert_close(sequence_cross_entropy(logits, targets.int(), pad_id=7), expected, atol=1e-12, rtol=0.0)
