"""Locks across processes, kept in the cache directory (never beside a run or a store).

``flock`` locks are released by the kernel when their holder dies, however it dies: a killed
export never leaves a lock behind that the next one must be told to delete.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
from collections.abc import Iterator
from pathlib import Path

from evalexport.paths import cache_dir

__all__ = ["file_lock", "named_lock"]


@contextlib.contextmanager
def named_lock(key: str) -> Iterator[None]:
    """Hold the exclusive lock called ``key`` (any text) while the block runs."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    locks = cache_dir() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with (locks / f"{digest}.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def file_lock(path: Path) -> contextlib.AbstractContextManager[None]:
    """The lock of one file, whatever path (relative, through a symlink) names it."""
    return named_lock(f"file:{path.resolve()}")
