"""Atomic writes: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

__all__ = ["write_text_atomically"]


def write_text_atomically(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` through a temporary sibling and a rename.

    The sibling is created exclusively (two writers never share one) with the permissions the
    user's umask gives a new file; a failed write removes it and leaves ``target`` as it was.
    """
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        temporary.replace(target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
