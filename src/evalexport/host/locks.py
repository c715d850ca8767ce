"""Locks across processes, kept in the cache directory (never beside a run or a store).

``flock`` locks are released by the kernel when their holder dies, however it dies: a killed
export never leaves a lock behind that the next one must be told to delete.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from evalexport.host.cache import cache_dir

__all__ = ["file_lock", "named_lock"]


@contextlib.contextmanager
def named_lock(key: str) -> Iterator[None]:
    """Hold the exclusive lock called ``key`` (any text) while the block runs.

    The lock file is in the cache directory; where that cannot be written (a cache shared
    read-only, its environments built already), in a directory of this user's under the
    system's temporary directory: every process of this machine that shares the read-only
    cache finds the same one.
    """
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    with _lock_file(digest) as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _lock_file(digest: str) -> IO[str]:
    try:
        locks = cache_dir() / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        return (locks / f"{digest}.lock").open("a")
    except OSError:  # a read-only cache
        fallback = Path(tempfile.gettempdir()) / f"evalexport-locks-{os.getuid()}"
        fallback.mkdir(mode=0o700, exist_ok=True)
        return (fallback / f"{digest}.lock").open("a")


def file_lock(path: Path) -> contextlib.AbstractContextManager[None]:
    """The lock of one file, whatever path (relative, through a symlink) names it."""
    return named_lock(f"file:{path.resolve()}")
