"""Progress of long work, as exporters report it."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Progress"]

Progress = Callable[[int, int], None]
"""Called as ``progress(done, total)`` during long work; the exporter's ``progress_unit`` says
what is counted (``bytes`` of input, or ``steps`` of a worker)."""
