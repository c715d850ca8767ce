"""Files as evalexport reads and writes them: a run's files opened only if they are regular
files (never waiting on a FIFO), read in bounded pieces and lines, and written atomically.

The trajectory conversion and the run's readers share these, so that neither needs the other
(nor the masking a run's saved config goes through).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, Final

__all__ = [
    "CHUNK",
    "MAX_LINE_BYTES",
    "RunFileError",
    "not_a_file_reason",
    "numbered_lines",
    "open_regular",
    "read_bounded",
    "write_text_atomically",
]

CHUNK: Final = 1 << 20
"""How much of a file is read at a time where it is read in pieces."""

MAX_LINE_BYTES: Final = 512 * 1024 * 1024
"""The longest rollouts line read (a model that never stopped writes tens of megabytes): a
longer one, or a file with no line break at all, is refused naming the line, never held."""


class RunFileError(Exception):
    """A file of the run is missing, cannot be read or cannot be exported; the message says
    which and why. ``details`` are for people to read (the rows a conversion refused)."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details


def not_a_file_reason(path: Path) -> str | None:
    """Why ``path``, which exists, cannot be read as a run's file (a FIFO, a device, a
    socket, a directory), or ``None``."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    for test, what in (
        (stat.S_ISFIFO, "a FIFO (a named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return f"{path} is {what}, not a regular file"
    return f"{path} is not a regular file"


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading if it is a regular file; :class:`RunFileError` saying what it
    is otherwise. A FIFO is never waited on (it is opened without blocking, then refused)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise RunFileError(not_a_file_reason(path) or f"{path} is not a regular file")
        os.set_blocking(descriptor, True)
        # Read a megabyte at a time: a rollouts line is read in one call, not two of the
        # file system's 4 KiB blocks (a fifth of the time to find the lines of a big file).
        return os.fdopen(descriptor, "rb", buffering=CHUNK)
    except BaseException:
        os.close(descriptor)
        raise


def read_bounded(path: Path, limit: int, what: str, hint: str) -> bytes:
    """The bytes of the small file ``path`` (``what``: "Saved run config"), read once and at most
    ``limit`` of them; a :class:`RunFileError` naming it when it is missing, unreadable, not a
    regular file, or larger (``hint`` says what to check then)."""
    try:
        with open_regular(path) as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise RunFileError(f"{what} not found: {path}") from None
    except OSError as error:
        raise RunFileError(
            f"Cannot read {what[0].lower()}{what[1:]} {path}: {error.strerror or error}"
        ) from None
    if len(data) > limit:
        raise RunFileError(f"{what} {path} is larger than {limit // 2**20} MiB: {hint}")
    return data


def numbered_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Each line of a JSON-lines file with its 1-based number and its newline, read a chunk at
    a time (a regular file only); a file that cannot be read is a :class:`RunFileError`."""
    try:
        with open_regular(path) as handle:
            pending = b""
            number = 0
            while chunk := handle.read(CHUNK):
                pending += chunk
                *complete, pending = pending.split(b"\n")
                for line in complete:
                    number += 1
                    yield number, line + b"\n"
            if pending:
                yield number + 1, pending
    except OSError as error:
        raise RunFileError(f"Cannot read {path}: {error.strerror or error}") from None


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
