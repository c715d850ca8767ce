"""Progress of long work: as exporters report it, and as a log shows it.

An exporter reports ``progress(done, total)`` to its caller (the CLI draws it in place on a
terminal). Everywhere else (a Slurm or CI log, a file) progress is lines: one per stage of an
export (:func:`stage`), and during long work at most one every few seconds
(:class:`ProgressLog`: what is done, the rate, the time left). Both are INFO records of the
``evalexport.progress`` logger, which the CLI prints on stderr, never on stdout where
``--json`` goes; a Python caller sees them where its logging sends INFO records.

``$EVALEXPORT_PROGRESS_INTERVAL`` sets the seconds between two lines of long work (default 5).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Final

__all__ = [
    "INTERVAL_VARIABLE",
    "Progress",
    "ProgressLog",
    "guarded",
    "human_size",
    "reading",
    "reading_progress",
    "speaking_for",
    "stage",
]

Progress = Callable[[int, int], None]
"""Called as ``progress(done, total)`` during long work: ``bytes`` of input read, or ``steps``
of a worker (``evalexport.spec.base.progress_unit`` says which an exporter counts)."""

INTERVAL_VARIABLE: Final = "EVALEXPORT_PROGRESS_INTERVAL"

logger = logging.getLogger("evalexport.progress")


def stage(exporter: str, text: str, *, delivering: bool = False) -> None:
    """One line for a stage of an export: ``mlflow: reading aime24_rollouts.jsonl (200.0 MiB)``.
    ``delivering``: the stage is the delivery's start (``exporting to …``), from which the
    exporter's log keeps a line coming (:meth:`ProgressLog.begin`), before its first report
    too."""
    logger.info("%s: %s", exporter, text)
    if delivering:
        for log in _kept_alive(exporter):
            log.begin()


def interval() -> float:
    """Seconds between two lines of long work (:func:`evalexport.settings.progress_interval`:
    ``$EVALEXPORT_PROGRESS_INTERVAL``, at least half a second, else 5)."""
    from evalexport.settings import progress_interval

    return progress_interval()


class ProgressLog:
    """A :data:`Progress` that logs a line at most every :func:`interval` seconds:
    ``mlflow: reading the run: 84.0 MiB of 200.0 MiB (42%), 12.3 MiB/s, about 10 s left``.
    Work that ends within the interval logs nothing (its stage line said it all); longer work
    logs its end too. The rate and the time left are measured from the first report (or from
    the delivery's start, :meth:`begin`).

    ``keep_alive``: once work has begun, a line every interval even while no report comes
    (:meth:`tick`, from a thread of its own until :meth:`close`): a worker's one long step (a
    big artifact written, a table built, an upload waiting for its verdict) shows in a log as
    the step under way and for how long, not as silence."""

    def __init__(
        self,
        label: str,
        unit: str = "bytes",
        *,
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        emit: Callable[[str], None] | None = None,
        keep_alive: bool = False,
    ) -> None:
        self.label = label
        self.unit = unit
        self._every = interval() if every is None else every
        self._clock = clock
        self._emit = emit or (lambda line: logger.info("%s", line))
        self._started: float | None = None
        self._last: float | None = None
        """When a line was last logged."""
        self._reported = 0.0
        """When the last report came (or the work began: :meth:`begin`)."""
        self._reports = False
        self._first: tuple[float, int] | None = None
        """When the first report came, and what it said was done: the rate is measured from it
        (a worker's start, or an environment's build, is no part of its pace)."""
        self._done = self._total = 0
        self._finished = False
        self._lock = threading.Lock()  # reports come on a worker's reader thread, ticks on ours
        self.keep_alive = keep_alive
        self._closed = threading.Event()
        if keep_alive:
            _KEPT_ALIVE.add(self)

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            if self._closed.is_set():
                return
            now = self._clock()
            if self._started is None:
                self._start(now)
            assert self._started is not None
            assert self._last is not None
            self._done, self._total, self._reported = done, total, now
            self._reports = True
            if self._first is None:
                self._first = (now, done)
            finished = total > 0 and done >= total
            due = now - self._last >= self._every
            if self._finished or not (due or (finished and self._last > self._started)):
                return
            self._last = now
            self._finished = finished
            self._emit(f"{self.label}: {self._described(now)}")

    def begin(self) -> None:
        """The work has begun, though nothing is reported yet (a worker starting: its SDK
        imported, its store opened): a kept-alive log says so each interval until the first
        report, ``mlflow: under way for 6 s; no step reported yet``."""
        with self._lock:
            if self._started is None and not self._closed.is_set():
                self._start(self._clock())

    def _start(self, now: float) -> None:
        self._started = self._last = self._reported = now
        if self.keep_alive and not self._closed.is_set():
            threading.Thread(
                target=self._tick_until_closed, name="evalexport-progress", daemon=True
            ).start()

    def tick(self) -> None:
        """Log a line if work has begun, has not ended, and nothing was logged for an
        interval: the last report again (the rate falls as the wait goes on) and how long
        nothing has been reported: ``mlflow: 5 of 8 steps (62%), 0.2 steps/s, about 15 s left;
        step 6 under way for 12 s``."""
        with self._lock:
            if self._started is None or self._last is None or self._finished:
                return
            if _SPOKEN_FOR[self.label] > 0:
                return  # another line speaks for the work meanwhile (speaking_for)
            if self._closed.is_set() or (self._reports and self._total <= 0):
                return  # ended, or nothing to count
            now = self._clock()
            if now - self._last < self._every:
                return
            self._last = now
            quiet = _duration(now - self._reported)
            if not self._reports:
                self._emit(f"{self.label}: under way for {quiet}; no step reported yet")
                return
            under_way = (
                f"nothing more read for {quiet}"
                if self.unit == "bytes"
                else f"step {self._done + 1} under way for {quiet}"
            )
            self._emit(f"{self.label}: {self._described(now)}; {under_way}")

    def heard(self) -> None:
        """Something was said of the work just now: the next kept-alive line waits a whole
        interval."""
        with self._lock:
            if self._last is not None:
                self._last = self._clock()

    def close(self) -> None:
        """No more lines, from now on: the work ended (or failed: its result says so). A line
        being written as it is called is written before it returns."""
        with self._lock:
            self._closed.set()
        _KEPT_ALIVE.discard(self)

    def _tick_until_closed(self) -> None:
        # Ticks a quarter interval apart, a minute at most: a wait any clock can time.
        while not self._closed.wait(min(self._every / 4, 60.0)):
            self.tick()

    def _described(self, now: float) -> str:
        """What is done at ``now``, at the pace since the first report, and how long the work
        has taken since it began."""
        assert self._started is not None
        since, done_then = self._first if self._first is not None else (self._started, 0)
        rate: float | None = None  # done over the time since the work began
        if since > self._started:  # begun before its first report: paced from that report
            moved = self._done - done_then
            rate = moved / (now - since) if moved > 0 and now > since else 0.0  # 0: no pace yet
        return self.describe(self._done, self._total, now - self._started, rate)

    def describe(self, done: int, total: int, elapsed: float, rate: float | None = None) -> str:
        """``84.0 MiB of 200.0 MiB (42%), 12.3 MiB/s, about 10 s left``: the rate is ``rate``,
        else ``done`` over ``elapsed``."""
        percent = 100 * done // total if total else 100
        if self.unit == "bytes":
            said = f"{human_size(done)} of {human_size(total)} ({percent}%)"
        else:
            said = f"{done} of {total} {self.unit} ({percent}%)"
        if rate is None:
            rate = done / elapsed if elapsed > 0 else 0.0
        if elapsed <= 0 or done <= 0 or rate <= 0:
            return said
        pace = f"{human_size(int(rate))}/s" if self.unit == "bytes" else f"{rate:.1f} {self.unit}/s"
        if done >= total:
            return f"{said}, {pace}, done in {_duration(elapsed)}"
        left = _duration((total - done) / rate)
        return f"{said}, {pace}, {left if left == 'under 1 s' else 'about ' + left} left"


def _duration(seconds: float) -> str:
    """``under 1 s``, ``8 s``, ``3 min 20 s``, ``1 h 05 min``."""
    if seconds < 0.5:
        return "under 1 s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, rest = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


_KEPT_ALIVE: Final[weakref.WeakSet[ProgressLog]] = weakref.WeakSet()
"""The kept-alive logs open now: a delivery's start begins the exporter's (:func:`stage`)."""

_SPOKEN_FOR: Final[collections.Counter[str]] = collections.Counter()
"""The exporters whose work other lines speak for now, each as many times as blocks do
(:func:`speaking_for`; two environments built at once for one exporter)."""
_SPOKEN_FOR_LOCK: Final = threading.Lock()


@contextlib.contextmanager
def speaking_for(exporter: str) -> Iterator[None]:
    """While the block runs, its own lines speak for ``exporter``'s work (an environment's
    build says each interval how long it has gone on): the exporter's kept-alive log says
    nothing, and waits a whole interval again when the block ends, so that a log holds one line
    at a time of the same wait, not two taking turns."""
    with _SPOKEN_FOR_LOCK:
        _SPOKEN_FOR[exporter] += 1
    try:
        yield
    finally:
        with _SPOKEN_FOR_LOCK:
            _SPOKEN_FOR[exporter] -= 1
        for log in _kept_alive(exporter):
            log.heard()


def _kept_alive(exporter: str) -> list[ProgressLog]:
    """The kept-alive logs of ``exporter``'s work open now."""
    return [log for log in list(_KEPT_ALIVE) if log.label == exporter]


_reading: ContextVar[Progress | None] = ContextVar("evalexport_reading_progress", default=None)


@contextlib.contextmanager
def reading(report: Progress | None) -> Iterator[None]:
    """Within the block, reading a run's rollouts reports ``report(bytes_read, total)``
    (:func:`evalexport.reading.prepare` asks :func:`reading_progress`)."""
    token = _reading.set(report)
    try:
        yield
    finally:
        _reading.reset(token)


def reading_progress() -> Progress | None:
    """Where the rollouts being read report their bytes, if anyone asked (:func:`reading`)."""
    return _reading.get()


def human_size(size: int) -> str:
    """``1.5 KiB``, ``200.0 MiB``: a byte count as a person reads it."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def guarded(progress: Progress | None) -> Progress | None:
    """A caller's progress callback whose failure never fails an export: the first exception
    it raises is logged, and it is not called again."""
    if progress is None:
        return None
    broken = False

    def report(done: int, total: int) -> None:
        nonlocal broken
        if broken:
            return
        try:
            progress(done, total)
        except Exception as error:
            broken = True
            logger.warning(
                "the progress callback raised %s: %s; the export goes on without it",
                type(error).__name__,
                error,
            )

    return report
