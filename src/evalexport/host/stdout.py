"""Standard output is the command's own: what others' code writes there goes to stderr."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
from collections.abc import Iterator
from typing import TextIO

__all__ = ["others_write_to_stderr"]


class _StderrForOthers(io.TextIOBase):
    """``sys.stdout`` while others' code runs: what it writes goes to stderr, and closing it
    (``sys.stdout.close()`` in a plugin) closes nothing of the command's own."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(text)

    def flush(self) -> None:
        with contextlib.suppress(Exception):
            self._stream.flush()

    def close(self) -> None:
        self.flush()

    @property
    def closed(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]  # read-only on io.TextIOBase too
        return self._stream.encoding


@contextlib.contextmanager
def others_write_to_stderr() -> Iterator[None]:
    """Within the block, what is written to standard output goes to standard error instead:
    a ``print`` and a write to file descriptor 1 alike, by this process or a process it starts.

    A plugin's import or hooks, or an SDK, may print; stdout carries only the command's
    result (one line of JSON with ``--json``), so a script reading it never meets theirs.
    Used where others' code runs in this process: a plugin's import
    (:mod:`evalexport.spec.registry`) and an export on the command line; ``plan run``'s
    export processes keep their stdout for results the same way
    (:mod:`evalexport.plans.pool_worker`).

    Others' code may close what it should not: ``sys.stdout.close()`` closes nothing of ours,
    and a descriptor sweep (``os.closerange(3, 4096)``) that takes the saved standard output
    with it leaves the result on stderr, said so, never a traceback.
    """
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    saved: int | None = None
    identity: tuple[int, int] | None = None
    try:
        saved = os.dup(1)
        identity = _identity(saved)
        os.dup2(2, 1)
    except OSError:  # no standard output or error to speak of: Python's print is kept apart
        if saved is not None:
            os.close(saved)
            saved = None
    try:
        with contextlib.redirect_stdout(_StderrForOthers(sys.stderr)):
            yield
    finally:
        if saved is not None:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            _restore(saved, identity)


def _identity(descriptor: int) -> tuple[int, int] | None:
    try:
        status = os.fstat(descriptor)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def _restore(saved: int, identity: tuple[int, int] | None) -> None:
    """Put the saved standard output back on descriptor 1, if it is still the one saved: a
    plugin may have closed it, and another file may have taken its number since."""
    if identity is not None and _identity(saved) == identity:
        try:
            os.dup2(saved, 1)
            os.close(saved)
            return
        except OSError:
            pass
    logging.getLogger("evalexport").warning(
        "code run by this command closed file descriptor %d, which held evalexport's standard "
        "output; the result goes to stderr",
        saved,
    )
