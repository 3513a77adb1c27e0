"""tformer.book.environment: seeding repeats draws, device choice, environment report."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from tformer.book.environment import environment_report, get_device, seed_everything


def test_seed_everything_repeats_all_three_generators() -> None:
    seed_everything(123)
    first = (random.random(), np.random.rand(), torch.rand(3))  # noqa: NPY002
    seed_everything(123)
    second = (random.random(), np.random.rand(), torch.rand(3))  # noqa: NPY002
    assert first[0] == second[0] and first[1] == second[1]
    assert torch.equal(first[2], second[2])
    seed_everything(124)
    assert not torch.equal(torch.rand(3), first[2])


@pytest.mark.parametrize(("seed", "error"), [(-1, ValueError), (1.5, TypeError), (True, TypeError)])
def test_seed_everything_rejects_bad_seeds(seed, error) -> None:
    with pytest.raises(error, match="seed"):
        seed_everything(seed)


def test_get_device_defaults_to_cuda_when_available_else_cpu() -> None:
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert get_device().type == expected
    assert get_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="prefer"):
        get_device("tpu")


def test_environment_report_names_versions_and_device() -> None:
    report = environment_report()
    assert report["torch"] == torch.__version__
    assert report["device"] in {"cpu", "cuda"}
