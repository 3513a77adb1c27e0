"""Reproducibility, devices and clocks: the library's one home for them (introduced in ``00_preface``).

- :func:`seed_everything`, :func:`get_device`, :func:`environment_report`: what every chapter calls first
  (``tformer.book.environment`` re-exports them for the notebooks);
- :func:`clock` and :func:`training_clock`: the one way the package reads time. :func:`clock` is the reading
  itself (wall or CPU seconds, synchronised with a GPU); :func:`training_clock` picks the one an "equal
  training time" comparison should read. :func:`tformer.analysis.complexity.median_times` and
  :func:`tformer.training.train.train` read these.

Nothing here changes global state on import: each function is called explicitly by a notebook or a test.
"""

from __future__ import annotations

import os
import platform
import random
import sys
import time
from collections.abc import Callable
from typing import Literal

import numpy as np
import torch

from tformer._checks import check_choice, check_int, check_type

__all__ = ["check_device", "clock", "environment_report", "get_device", "seed_everything", "training_clock"]


def check_device(device: object, what: str = "model") -> torch.device:
    """``device`` as a ``torch.device`` that this machine has and that holds values: the CPU, a CUDA GPU or an
    Apple GPU (``mps``). ``what`` names what will live there, in the message.

    Raises:
        TypeError: if ``device`` is not a str or ``torch.device``.
        ValueError: if it names no device torch knows, another kind (``meta``, ``xla``, ...), or a GPU this
            machine lacks.
    """
    check_type("device", device, (str, torch.device), "a str or torch.device")
    try:
        target = torch.device(device)
    except RuntimeError:
        raise ValueError(f"device: expected a torch device such as 'cpu' or 'cuda', got {device!r}") from None
    if target.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"device: expected 'cpu', 'cuda' or 'mps' (a {what} needs its weights on one), got {device!r}")
    if target.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device: expected a device this machine has, got {device!r} (torch sees no CUDA GPU)")
    if target.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device: expected a device this machine has, got {device!r} (torch sees no Apple GPU)")
    return target


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, NumPy and torch (CPU and every CUDA device).

    Args:
        seed: a non-negative integer.

    Raises:
        TypeError: if ``seed`` is not an ``int``.
        ValueError: if ``seed`` is negative or 2⁶³ or more (torch's generator takes a signed 64-bit seed).
    """
    seed = check_int("seed", seed, 0, 2**63 - 1)  # torch's generator takes a signed 64-bit seed
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


def clock(kind: Literal["wall", "cpu"] = "wall", device: torch.device | str | None = None) -> Callable[[], float]:
    """A function that reads the time in seconds: the package's one clock.

    ``"wall"``: ``time.perf_counter`` (elapsed time, what a user waits); on a CUDA or MPS ``device`` it first
    waits for the queued kernels (``synchronize``), which run asynchronously, so a reading after a call counts
    the call. ``"cpu"``: ``time.process_time``, the CPU seconds of this process summed over its threads, which
    other programs on a shared machine inflate far less (meaningless on a GPU, so refused there). On the CPU
    the two are returned as they are (``clock("cpu") is time.process_time``).

    Raises:
        ValueError: an unknown ``kind``, or ``"cpu"`` with a CUDA or MPS ``device``.
    """
    check_choice("clock", kind, ("wall", "cpu"))
    device_type = "cpu" if device is None else torch.device(device).type
    if device_type not in ("cuda", "mps"):
        return time.perf_counter if kind == "wall" else time.process_time
    if kind == "cpu":
        raise ValueError(f"clock: expected 'wall' on a {device_type.upper()} device ('cpu' measures CPU seconds), got 'cpu'")
    sync = torch.cuda.synchronize if device_type == "cuda" else torch.mps.synchronize

    def read() -> float:
        sync()
        return time.perf_counter()

    return read


def training_clock(device: torch.device | str = "cpu") -> Callable[[], float]:
    """The clock an "equal training time" comparison should read on ``device``, in seconds.

    Chosen once, when the clock is made (so a start and an end reading always come from the same clock):

    - on a CUDA or MPS GPU: the wall clock after waiting for queued work (``synchronize`` then
      ``time.perf_counter``), since kernels run asynchronously;
    - on a CPU with one torch thread: this process's CPU time (``time.process_time``). Other programs on a
      shared machine inflate it far less than the wall clock, and on an idle machine the two agree;
    - on a CPU with several threads: the wall clock (CPU times of the threads add up, idle spinning included).

    Pass it as ``train(..., clock=training_clock(device))``; make a new one after changing the thread count.

    Raises:
        TypeError: if ``device`` is not a ``str`` or ``torch.device``.
        ValueError: if it names no device torch knows, or one other than ``cpu``, ``cuda`` and ``mps``, or a
            ``cuda``/``mps`` device this machine does not have.
    """
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device: expected a str or torch.device, got {type(device).__name__}")
    try:
        kind = torch.device(device).type
    except RuntimeError as error:
        raise ValueError(f"device: expected a device name such as 'cpu' or 'cuda', got {device!r}") from error
    if kind == "cpu":
        return clock("cpu" if torch.get_num_threads() == 1 else "wall")
    if kind not in ("cuda", "mps"):
        raise ValueError(f"device: expected 'cpu', 'cuda' or 'mps', got {kind!r}")
    available = torch.cuda.is_available() if kind == "cuda" else torch.backends.mps.is_available()
    if not available:  # the clock's first reading would fail (synchronize on a missing device)
        raise ValueError(f"device: expected a device this machine has, got {kind!r} (not available here)")
    return clock("wall", kind)
