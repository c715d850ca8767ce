"""Signals that stop an export, raised as one exception so every layer can clean up.

Slurm, ``kill`` and container stops send SIGTERM; a user presses Ctrl-C (SIGINT); a closed
terminal sends SIGHUP. Python's defaults differ for each (SIGTERM and SIGHUP end the process on
the spot, skipping every ``finally``), so the CLI turns all three into :class:`Interrupted`
while it works. An exception unwinds normally: the worker is told to stop and end its remote
run, scratch directories are removed, no marker is written, and the CLI exits with
``128 + signal``, as a shell reports a process a signal stopped.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import final

__all__ = ["STOP_SIGNALS", "Deferred", "Interrupted", "deferred", "signal_name", "signals_raise"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that stop an export cleanly."""


def signal_name(signum: int) -> str:
    """``SIGTERM`` for 15: a signal's name as a user knows it."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def exit_description(returncode: int) -> str:
    """How a child process ended, from ``subprocess``'s return code (negative: a signal)."""
    if returncode < 0:
        return f"was killed by {signal_name(-returncode)}"
    return f"exited with code {returncode}"


@final
class Interrupted(BaseException):
    """A stop signal arrived. A ``BaseException``, like ``KeyboardInterrupt``: an exporter's
    ``except Exception`` must not turn it into an ordinary failure and carry on."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal_name(signum)}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """``128 + signal``, as a shell reports a process a signal ended."""
        from evalexport.workers.protocol import ExitCode

        return int(ExitCode.for_signal(self.signum))

    @classmethod
    def from_exception(cls, error: BaseException) -> Interrupted:
        """``KeyboardInterrupt`` (raised where no handler of ours was installed) is SIGINT."""
        return error if isinstance(error, Interrupted) else cls(signal.SIGINT)


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """Within the block, SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted`.

    Handlers can only be installed from the main thread; elsewhere (a library caller's worker
    thread) the block changes nothing and Python's defaults apply.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    # A signal ignored when we started (``nohup``, a job started in the background) stays so.
    for signum, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(signum, _raise_interrupted)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


@final
class Deferred:
    """What :func:`deferred` held back: the stop signal that arrived in its block, if any."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def record(self, signum: int, frame: FrameType | None) -> None:
        """The signal handler while deferred: remember the first signal that arrived."""
        self.signum = self.signum or signum


@contextlib.contextmanager
def deferred() -> Iterator[Deferred]:
    """Within the block, a stop signal is recorded, not raised: for work that must finish once
    begun (writing the marker of a remote run that exists). Each stop signal that raises
    :class:`Interrupted` here is held; one the user chose to ignore (``nohup`` ignores SIGHUP,
    a shell's background job SIGINT) stays ignored. The caller decides what a recorded signal
    means afterwards."""
    held = Deferred()
    ours = (
        [signum for signum in STOP_SIGNALS if signal.getsignal(signum) is _raise_interrupted]
        if threading.current_thread() is threading.main_thread()
        else []
    )
    for signum in ours:
        signal.signal(signum, held.record)
    try:
        yield held
    finally:
        for signum in ours:
            signal.signal(signum, _raise_interrupted)
