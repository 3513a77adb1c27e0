"""Reproducibility and device helpers used by every chapter (introduced in ``00_preface``).

Nothing here changes global state on import: each function is called explicitly by a notebook or a test.
"""

from __future__ import annotations

import os
import platform
import random
import sys

import numpy as np
import torch

from tformer._checks import check_choice, check_int

__all__ = ["environment_report", "get_device", "seed_everything"]


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, NumPy and torch (CPU and every CUDA device).

    Args:
        seed: a non-negative integer.

    Raises:
        TypeError: if ``seed`` is not an ``int``.
        ValueError: if ``seed`` is negative.
    """
    check_int("seed", seed, 0)
    random.seed(seed)
    np.random.seed(seed % 2**32)  # noqa: NPY002 -- seeding the legacy global generator is the point
    torch.manual_seed(seed)  # also seeds every CUDA device


def get_device(prefer: str | None = None) -> torch.device:
    """Pick the device a chapter runs on.

    CUDA when available, else CPU. Apple's MPS is used only when asked for with ``prefer="mps"``,
    because its float32 kernels round differently and the book's stored numbers come from CPU runs.

    Args:
        prefer: ``None`` (automatic), ``"cpu"``, ``"cuda"`` or ``"mps"``.

    Returns:
        A ``torch.device``.

    Raises:
        ValueError: if ``prefer`` is not one of the names above, or names a device that is not available.
    """
    if prefer is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    check_choice("prefer", prefer, ("cpu", "cuda", "mps"))
    available = {
        "cpu": True,
        "cuda": torch.cuda.is_available(),
        "mps": bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()),
    }
    if not available[prefer]:
        raise ValueError(f"prefer: expected a device available on this machine, got {prefer!r}")
    return torch.device(prefer)


def environment_report() -> dict[str, str]:
    """Versions and hardware facts for the preface's environment check.

    Returns:
        A dict of strings: Python, platform, torch, numpy, matplotlib, CPU threads, device, GPU name.
    """
    import matplotlib

    device = get_device()
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(terse=True),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "matplotlib": matplotlib.__version__,
        "cpu_count": str(os.cpu_count()),
        "torch_threads": str(torch.get_num_threads()),
        "device": str(device),
        "gpu": torch.cuda.get_device_name(0) if device.type == "cuda" else "none",
    }
