"""Small formatting helpers shared by the commands' printing."""

from __future__ import annotations

__all__ = ["human_size"]


def human_size(size: int) -> str:
    """``1.5 KiB``, ``200.0 MiB``: a byte count as a person reads it."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
