"""Atomic writes: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["write_text_atomically"]


def write_text_atomically(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` through a temporary sibling and a rename.

    The sibling is created exclusively, so two writers never share one; a failed write
    removes it and leaves ``target`` as it was.
    """
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            Path(temporary).unlink()
        raise
