"""When the evaluation ran: the times a remote run is given, rather than the export's.

NeMo Gym records epoch seconds in each rollout's ``ng_trajectory``: a turn's ``timestamp``,
a model call's and a tool call's ``started_at`` and ``completed_at``. The evaluation ran from
the earliest of them to the latest, over every rollout. A run without them (no trajectory)
is dated by its files: it ended when its rollouts file was last written, and began when the
earliest of its files was (the inputs it was given are written first).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, final

__all__ = ["FROM_FILES", "FROM_ROLLOUTS", "EvaluationTimes", "TimesSeen", "exported_at"]

FROM_ROLLOUTS: Final = "the rollouts' own timestamps"
FROM_FILES: Final = "the run files' modification times"
LATEST_DATE: Final = datetime.datetime(9999, 12, 31, 23, 59, 59, tzinfo=datetime.UTC).timestamp()
"""The latest epoch second a date can be written for (Python's, MLflow's and W&B's): a later
timestamp (milliseconds written as seconds) dates nothing, and is left out."""


@final
@dataclass(frozen=True)
class EvaluationTimes:
    """When the evaluation began and ended (epoch seconds), and what says so."""

    started_at: float
    ended_at: float
    source: str
    """:data:`FROM_ROLLOUTS` or :data:`FROM_FILES`."""
    left_out: int = 0
    """Timestamps the rollouts recorded past :data:`LATEST_DATE`: not dates, left out."""

    def warning(self) -> str | None:
        """What the result says of timestamps left out, or ``None``."""
        if not self.left_out:
            return None
        return (
            f"{self.left_out} rollout timestamp{'s' if self.left_out != 1 else ''} past the year "
            "9999 (milliseconds written as seconds?) left out of the evaluation's times, "
            f"taken from {self.source}"
        )

    @property
    def started_at_ms(self) -> int:
        """The start in milliseconds, as MLflow takes it."""
        return int(self.started_at * 1000)

    @property
    def ended_at_ms(self) -> int:
        """The end in milliseconds, as MLflow takes it."""
        return int(self.ended_at * 1000)

    def described(self) -> dict[str, str]:
        """The times as ISO 8601 text, with their source: for tags and summary fields."""
        return {
            "started_at": _iso(self.started_at),
            "ended_at": _iso(self.ended_at),
            "source": self.source,
        }


def exported_at() -> str:
    """Now, as the export's own time is recorded beside the evaluation's (ISO 8601, UTC)."""
    return _iso(datetime.datetime.now(datetime.UTC).timestamp())


def _iso(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="seconds")


class TimesSeen:
    """The earliest and latest of the timestamps Gym recorded, over the rollouts seen."""

    def __init__(self) -> None:
        self.earliest = math.inf
        self.latest = -math.inf
        self.left_out = 0

    def see(self, record: Mapping[str, object]) -> None:
        """Take in one rollout's timestamps (those of its ``ng_trajectory``)."""
        trajectory = record.get("ng_trajectory")
        if not isinstance(trajectory, Mapping):
            return
        # Gathered first, then told over in one loop: this runs for every rollout of a run.
        stamps = [turn.get("timestamp") for turn in _mappings(trajectory.get("turns"))]
        for kind in ("model_calls", "tool_calls"):
            for call in _mappings(trajectory.get(kind)):
                stamps += (call.get("started_at"), call.get("completed_at"))
        earliest, latest = self.earliest, self.latest
        for value in stamps:
            if not isinstance(value, int | float) or isinstance(value, bool):
                continue  # no number (a boolean is an int's subclass, and no time)
            if value - value != 0:
                continue  # NaN or an infinity: no time (an integer, of any size, is finite)
            # Compared as they are: an integer too large for a float is past any date.
            if value > LATEST_DATE:
                self.left_out += 1
            elif value > 0:
                earliest = min(earliest, value)
                latest = max(latest, value)
        self.earliest, self.latest = float(earliest), float(latest)

    def merge(self, earliest: float | None, latest: float | None, left_out: int) -> None:
        """Take in what another reader saw of other rollouts (``None``: no timestamp)."""
        if earliest is not None:
            self.earliest = min(self.earliest, earliest)
        if latest is not None:
            self.latest = max(self.latest, latest)
        self.left_out += left_out

    def seen(self) -> tuple[float | None, float | None]:
        """The earliest and latest timestamps seen, ``None`` for none: for :meth:`merge`."""
        if self.earliest > self.latest:
            return None, None
        return self.earliest, self.latest

    def times(self, files: Iterable[Path]) -> EvaluationTimes:
        """The evaluation's times: from the rollouts when they recorded any, else from the
        modification times of ``files`` (the rollouts file first: its is the end)."""
        if self.earliest <= self.latest:
            return EvaluationTimes(self.earliest, self.latest, FROM_ROLLOUTS, self.left_out)
        stamps = []
        for path in files:
            try:
                stamps.append(path.stat().st_mtime)
            except OSError:
                continue
        if not stamps:
            now = datetime.datetime.now(datetime.UTC).timestamp()
            return EvaluationTimes(now, now, FROM_FILES, self.left_out)
        return EvaluationTimes(min(stamps), stamps[0], FROM_FILES, self.left_out)


def _mappings(value: object) -> Iterable[Mapping[str, object]]:
    if not isinstance(value, list):
        return []
    # A dict (what JSON gives) is told without the ABC's check, which costs several times more.
    return [item for item in value if type(item) is dict or isinstance(item, Mapping)]
