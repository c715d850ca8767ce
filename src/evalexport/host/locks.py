"""Locks across processes, kept in the cache directory (never beside a run or a store).

``flock`` locks are released by the kernel when their holder dies, however it dies: a killed
export never leaves a lock behind that the next one must be told to delete. A holder that is
alive but stopped (Ctrl-Z, SIGSTOP) keeps its lock: a caller that passes a :class:`Waiting`
is told, once, who holds it and since when, and gives up at its limit
(:class:`LockWaitTimeout`) rather than wait without end.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final, final

from evalexport.host.cache import cache_dir

__all__ = ["LockWaitTimeout", "Waiting", "file_lock", "named_lock"]

_POLL_SECONDS: Final = 0.2
"""How often a waiting caller tries the lock again."""


@final
@dataclass(frozen=True)
class Waiting:
    """How a caller waits for a lock another process holds: ``what`` the lock guards (in a
    message: ``"an export of this run to mlflow"``), ``limit`` seconds at most, and ``say``,
    called once with a line saying who holds it and since when."""

    what: str
    limit: float
    say: Callable[[str], None]


class LockWaitTimeout(TimeoutError):
    """A lock another process held for longer than the caller's :attr:`Waiting.limit`."""

    def __init__(self, waiting: Waiting, holder: str, waited: float) -> None:
        self.holder = holder
        """Who holds it, as its holder wrote it (``process 1234 since 2026-12-04 10:00:01``)."""
        self.waited = waited
        super().__init__(
            f"{waiting.what} is held by {holder} and was still held after {waited:.0f} s; "
            "if that process is stopped (Ctrl-Z), resume it (fg) or end it, then run this again"
        )


@contextlib.contextmanager
def named_lock(key: str, *, waiting: Waiting | None = None) -> Iterator[None]:
    """Hold the exclusive lock called ``key`` (any text) while the block runs.

    The lock file is in the cache directory; where that cannot be written (a cache shared
    read-only, its environments built already), in a directory of this user's under the
    system's temporary directory: every process of this machine that shares the read-only
    cache finds the same one. Its holder writes its process id and since when into it. With
    ``waiting``, a lock another process holds is waited for at most ``waiting.limit`` seconds
    (:class:`LockWaitTimeout`), and ``waiting.say`` told who holds it; without, without end.
    """
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    with _lock_file(digest) as handle:
        if waiting is None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        else:
            _wait_for(handle, waiting)
        try:
            _note_holder(handle)
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _wait_for(handle: IO[str], waiting: Waiting) -> None:
    if _try(handle):
        return
    holder = _holder(handle)
    waiting.say(f"waiting for {holder}, which holds {waiting.what}")
    started = time.monotonic()
    while not _try(handle):
        waited = time.monotonic() - started
        if waited >= waiting.limit:
            raise LockWaitTimeout(waiting, _holder(handle), waited)
        time.sleep(min(_POLL_SECONDS, waiting.limit - waited))


def _try(handle: IO[str]) -> bool:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _note_holder(handle: IO[str]) -> None:
    """Write who holds the lock into its file, for a process that waits for it."""
    since = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S")
    with contextlib.suppress(OSError):
        os.ftruncate(handle.fileno(), 0)
        os.pwrite(handle.fileno(), f"process {os.getpid()} since {since}\n".encode(), 0)


def _holder(handle: IO[str]) -> str:
    """Who holds the lock, as its holder wrote it; an unknown process if it wrote nothing."""
    try:
        said = os.pread(handle.fileno(), 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        said = ""
    return said or "another process"


def _lock_file(digest: str) -> IO[str]:
    try:
        locks = cache_dir() / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        return (locks / f"{digest}.lock").open("a+")
    except OSError:  # a read-only cache
        fallback = Path(tempfile.gettempdir()) / f"evalexport-locks-{os.getuid()}"
        fallback.mkdir(mode=0o700, exist_ok=True)
        return (fallback / f"{digest}.lock").open("a+")


def file_lock(
    path: Path, *, waiting: Waiting | None = None
) -> contextlib.AbstractContextManager[None]:
    """The lock of one file, whatever path (relative, through a symlink) names it."""
    return named_lock(f"file:{path.resolve()}", waiting=waiting)
