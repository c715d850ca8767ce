"""Signals that stop an export, raised as one exception so every layer can clean up.

Slurm, ``kill`` and container stops send SIGTERM; a user presses Ctrl-C (SIGINT); a closed
terminal sends SIGHUP. Python's defaults differ for each (SIGTERM and SIGHUP end the process on
the spot, skipping every ``finally``), so the CLI turns all three into :class:`Interrupted`
while it works. An exception unwinds normally: the worker is told to stop and end its remote
run, scratch directories are removed, no marker is written, and the CLI exits with
``128 + signal``, as a shell reports a process a signal stopped.

Once an export has landed (the remote run is finished, the output renamed into place), a stop
signal can no longer undo it, only cost it its marker and so make a rerun export it twice.
The pipeline opens a :func:`landing` around each delivery; from :func:`landed` on, a stop
signal is recorded, the marker is written, and the export stands, as a log line says.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import final

__all__ = [
    "STOP_SIGNALS",
    "Deferred",
    "Interrupted",
    "Landing",
    "deferred",
    "landed",
    "landing",
    "signal_name",
    "signals_raise",
]

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
        from evalexport.workers.exit_codes import ExitCode

        return int(ExitCode.for_signal(self.signum))

    @classmethod
    def from_exception(cls, error: BaseException) -> Interrupted:
        """``KeyboardInterrupt`` (raised where no handler of ours was installed) is SIGINT."""
        return error if isinstance(error, Interrupted) else cls(signal.SIGINT)


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    """The handler :func:`signals_raise` installs: raise :class:`Interrupted`, unless the
    export under way has landed (then the signal is recorded, for the export stands)."""
    current = _landing
    if current is not None and current.has_landed:
        current.record(signum, frame)
        return
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

    def raise_held(self) -> None:
        """Act on the signal held, if one arrived, as on one arriving now: raise
        :class:`Interrupted`, the stop it asked for, now that the work it could not cut short
        is done; or, once the export has :func:`landed`, leave it recorded there."""
        if self.signum is not None:
            _raise_interrupted(self.signum, None)


@contextlib.contextmanager
def deferred() -> Iterator[Deferred]:
    """Within the block, a stop signal is recorded, not raised: for work that must finish once
    begun (writing the marker of a remote run that exists). Each stop signal that raises
    :class:`Interrupted` here is held; one the user chose to ignore (``nohup`` ignores SIGHUP,
    a shell's background job SIGINT) stays ignored. The caller decides what a recorded signal
    means afterwards: :meth:`Deferred.raise_held` stops then, unless the work done should
    stand (a remote run's marker), which a log line then says."""
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


@final
class Landing:
    """One delivery (:func:`landing`): until :meth:`landed`, a stop signal raises as ever;
    from then on it is recorded in :attr:`signum` and the export goes on to its marker."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.has_landed = False

    def record(self, signum: int, frame: FrameType | None) -> None:
        """Remember the first stop signal that arrived after the landing."""
        self.signum = self.signum or signum

    def landed(self) -> None:
        """The target holds the export now. Any thread may say so (a worker's report reader
        does, the moment the worker reports its remote run finished)."""
        self.has_landed = True


_landing: Landing | None = None
"""The delivery under way in the main thread, if any."""


@contextlib.contextmanager
def landing() -> Iterator[Landing]:
    """A delivery, from before the target is touched to its marker: see :class:`Landing`.
    Outside the main thread (a library caller's worker thread, where no handler of ours runs)
    it changes nothing."""
    global _landing
    current = Landing()
    if threading.current_thread() is not threading.main_thread():
        yield current
        return
    outer, _landing = _landing, current
    try:
        yield current
    finally:
        _landing = outer


def current_landing() -> Landing | None:
    """The delivery under way, asked from the main thread that runs it, for code that reports
    its landing from another thread (the worker's report reader); ``None`` elsewhere."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return _landing


def landed() -> None:
    """Say that the export under way has landed at its target: a stop signal from now on no
    longer undoes it. An exporter that delivers in this process may say so the moment its
    output is complete; the pipeline says so when the delivery returns a success."""
    if (current := current_landing()) is not None:
        current.landed()
