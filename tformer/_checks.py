"""Argument checks shared across the package, with one message format: ``name: expected ..., got ...``."""

from __future__ import annotations

__all__ = ["check_int"]


def check_int(name: str, value: object, minimum: int | None = None) -> int:
    """Return ``value`` if it is an ``int`` (a ``bool`` is not accepted) of at least ``minimum``.

    Args:
        name: the argument's name, the first word of the error message.
        value: what the caller passed.
        minimum: the smallest allowed value, or ``None`` for any int.

    Returns:
        ``value``, unchanged.

    Raises:
        TypeError: if ``value`` is not an int, or is a bool (``True`` is an int in Python, never a size here).
        ValueError: if ``value < minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        wanted = {0: "a non-negative int", 1: "a positive int"}.get(minimum, f"an int >= {minimum}")
        raise ValueError(f"{name}: expected {wanted}, got {value!r}")
    return value
