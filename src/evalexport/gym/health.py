"""The health verdicts NeMo Gym writes beside a run, read once for the tracking exporters.

``gym eval run`` checks every rollout once collection ends (``nemo_gym/rollout_health.py``) and
writes two reports into the rollouts file's directory, under fixed names
(``health/types.py``): ``quality_summary.json`` (the run's verdict counts, the findings of each
check, coverage and call statistics under ``run``; each task's repeats under ``tasks``) and
``rollout_verdicts.jsonl`` (one line per rollout: its indices, ``rollout_id``, ``verdict``
(``healthy``, ``unhealthy`` or ``unobserved``), ``findings`` and ``unobserved``; a
``stage_index`` for a multi-stage driver's rows). Rollout collection also writes
``<stem>_failures.jsonl`` (``path_utils.failures_path_for``): one line per failed attempt, with
its ``_ng_failure_class``, message and, when Gym was told, ``_ng_failure_terminal``.

What travels (SPEC §1): the summary's ``run`` numbers as metrics under ``health/`` (its JSON
paths joined by ``/``; each check's coverage stays in the file), the worst verdict of the run as the tag or summary value
``health/verdict``, the failed attempts counted (``health/failures/attempts``,
``health/failures/terminal``), each rollout's verdict as a column of the samples table, and the
three files themselves, secrets masked where they leave. The reports are named alike for every
run of a directory (Gym writes them into the rollouts file's directory, the last run's over the
one before), so a report that does not describe this run (its record count, its rollouts or
their ids differ) is left out, and so are both reports when the directory holds other runs and
nothing in them names this one (Gym's rollout ids are ``<task>-<rollout>`` unless the run
body gave its own: alike for every run); the result says why. A run without them exports as
before.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Final, Protocol, final

from evalexport.gym.identity import RolloutKey, gym_rollout_id, rollout_key
from evalexport.host.files import (
    RunFileError,
    not_a_file_reason,
    numbered_lines,
    read_bounded,
)
from evalexport.ingress import PathRefused, inside, load_json
from evalexport.metrics import finite_numbers

__all__ = [
    "FAILURES_ATTEMPTS_METRIC",
    "FAILURES_TERMINAL_METRIC",
    "HEALTH_PREFIX",
    "QUALITY_SUMMARY_NAME",
    "ROLLOUT_VERDICTS_NAME",
    "VERDICT_KEY",
    "HealthPaths",
    "RunHealth",
    "read_health",
    "with_health",
]

QUALITY_SUMMARY_NAME: Final = "quality_summary.json"
"""Gym's ``QUALITY_SUMMARY_FILENAME``, in the rollouts file's directory."""
ROLLOUT_VERDICTS_NAME: Final = "rollout_verdicts.jsonl"
"""Gym's ``ROLLOUT_VERDICTS_FILENAME``, in the rollouts file's directory."""
HEALTH_PREFIX: Final = "health/"
VERDICT_KEY: Final = "health/verdict"
"""The run's worst rollout verdict: ``unhealthy`` if any rollout is, else ``unobserved`` if any
is, else ``healthy`` (evalexport's summary of Gym's counts; Gym writes none of its own)."""
FAILURES_ATTEMPTS_METRIC: Final = "health/failures/attempts"
FAILURES_TERMINAL_METRIC: Final = "health/failures/terminal"
_WORST_FIRST: Final = ("unhealthy", "unobserved", "healthy")
MAX_FILE_BYTES: Final = 64 * 1024 * 1024
"""The largest report read whole (the summary), or kept to upload (the others: larger ones are
still counted, and the result says they were not uploaded)."""


class HealthPaths(Protocol):
    """Where a run's health files are (:class:`evalexport.run.RunArtifacts` has them)."""

    @property
    def quality_summary(self) -> Path:
        """Gym's quality summary."""

    @property
    def rollout_verdicts(self) -> Path:
        """Gym's per-rollout verdicts."""

    @property
    def failures(self) -> Path:
        """Gym's failed attempts."""

    def other_runs_in_directory(self) -> list[Path]:
        """Rollouts files of other runs that share this run's directory."""


@final
@dataclass
class RunHealth:
    """What a run's health files hold that an export sends; empty for a run without them."""

    VERDICT_KEY: ClassVar[str] = VERDICT_KEY
    """The name the run's verdict is sent under (a tag, a summary key)."""
    VERDICT_COLUMN: ClassVar[str] = "health_verdict"
    """The samples table's column of each rollout's verdict, when the verdicts describe the run."""

    metrics: dict[str, float] = field(default_factory=dict)
    """``health/...`` numbers: the summary's ``run`` section and the failure counts."""
    verdict: str | None = None
    """The run's worst verdict (:data:`VERDICT_KEY`), if the summary describes this run."""
    verdicts: dict[RolloutKey, str] | None = None
    """Each rollout's verdict, if the verdicts file was read (checked against the rollouts by
    :meth:`verdict_of` and :meth:`verdicts_problem`)."""
    files: dict[str, bytes] = field(default_factory=dict)
    """The files to upload, by name, each as read (masked where they leave:
    :func:`evalexport.masking.scrub_json_bytes`)."""
    sizes: dict[Path, int] = field(default_factory=dict)
    """Each health file read, and its size: what a dry run lists."""
    notes: list[str] = field(default_factory=list)
    """What was left out, and why: the result says it."""
    summary_records: int | None = None
    """How many records the summary says it checked."""
    summary_path: Path | None = None
    verdicts_path: Path | None = None
    verdict_ids: dict[RolloutKey, str] = field(default_factory=dict)
    """The ``rollout_id`` each verdict line names, by its key."""
    verdict_lines: Counter[RolloutKey] = field(default_factory=Counter)
    """How many verdict lines name each key: rows that share their indices (Gym flags them
    ``rollout_duplicate_identity``) have a line each, and share the worst verdict here."""
    other_runs: list[Path] = field(default_factory=list)
    """Rollouts files of other runs in the directory, whose reports would bear the same names."""

    _seen: int = field(default=0, init=False, repr=False)
    _seen_keys: Counter[RolloutKey] = field(default_factory=Counter, init=False, repr=False)
    _unmatched: int = field(default=0, init=False, repr=False)
    _misnamed: int = field(default=0, init=False, repr=False)
    _named: int = field(default=0, init=False, repr=False)

    def joined(
        self, metrics: Mapping[str, float], texts: Mapping[str, str]
    ) -> tuple[dict[str, float], dict[str, str], list[str]]:
        """The run's metrics and texts with these health metrics and the verdict
        (:attr:`VERDICT_KEY`) added, and a warning for each health name a metric of the run
        already has (an agent named ``health``): the run's own value is kept."""
        return with_health(metrics, texts, self)

    def see(self, record: Mapping[str, object], ordinal: int | None = None) -> None:
        """Note a rollout (the file's row ``ordinal``) as the run is read: whether the verdicts
        file has its verdict, under the rollout id Gym gives it."""
        if self.verdicts is None:
            return
        self._seen += 1
        key = rollout_key(record, ordinal)
        if key not in self.verdicts:
            self._unmatched += 1
            return
        self._seen_keys[key] += 1
        said = self.verdict_ids.get(key)
        own = gym_rollout_id(record, ordinal)
        if said is None or own is None:
            return
        if said != own:
            self._misnamed += 1
        elif said != f"{key[0]}-{0 if key[1] is None else key[1]}":  # not Gym's <task>-<rollout>
            self._named += 1

    def names_this_run(self) -> bool:
        """Whether the verdicts tie the reports to this run: each rollout's own id (one the
        run body gave, not ``<task>-<rollout>``) is the one its verdict names."""
        return self._seen > 0 and self._named == self._seen and self.verdicts_fit()

    def verdicts_fit(self) -> bool:
        """Whether the verdicts file gives a verdict to each rollout seen, and to no other,
        under its id."""
        return (
            self.verdicts is not None
            and self._unmatched == 0
            and self._misnamed == 0
            and self._seen_keys == self.verdict_lines
        )

    def verdict_of(self, record: Mapping[str, object], ordinal: int | None = None) -> str | None:
        """A rollout's verdict (the file's row ``ordinal``), if the verdicts file gave one."""
        if self.verdicts is None:
            return None
        return self.verdicts.get(rollout_key(record, ordinal))

    def finish(self, rollout_count: int) -> None:
        """Once every rollout is seen: leave out what does not describe this run. The reports
        are named alike for every run of a directory, so they may be another's."""
        reports = [p for p in (self.summary_path, self.verdicts_path) if p is not None]
        if reports and self.other_runs and not self.names_this_run():
            others = ", ".join(path.name for path in self.other_runs)
            self.notes.append(
                f"{' and '.join(map(str, reports))} may be another run's: the directory also "
                f"holds {others}, NeMo Gym names the health reports alike for every run of a "
                "directory, and nothing in them names this run, so they are left out (keep "
                "each run in a directory of its own, where `gym eval health` writes its own)"
            )
            self._leave_out_summary()
            self.verdicts = None
            self.files.pop(ROLLOUT_VERDICTS_NAME, None)
            return
        if self.summary_records is not None and self.summary_records != rollout_count:
            self.notes.append(
                f"{self.summary_path} describes {self.summary_records} records and the run "
                f"holds {rollout_count}: it is not this run's, so its metrics and verdict are "
                "left out (`gym eval health` on this run writes its own)"
            )
            self._leave_out_summary()
        if self.verdicts is not None and not self.verdicts_fit():
            misnamed = f", {self._misnamed} under another id" if self._misnamed else ""
            self.notes.append(
                f"{self.verdicts_path} holds {self.verdict_lines.total()} verdicts for the run's "
                f"{self._seen} rollouts ({self._unmatched} without one{misnamed}): it is not "
                "this run's, so it is left out and the samples table has no health_verdict "
                "column"
            )
            self.verdicts = None
            self.files.pop(ROLLOUT_VERDICTS_NAME, None)

    def _leave_out_summary(self) -> None:
        """The summary's metrics and verdict and the file itself (the failures file is named
        after the run: its counts stay)."""
        self.metrics = {
            k: v for k, v in self.metrics.items() if k.startswith(f"{HEALTH_PREFIX}failures/")
        }
        self.verdict = None
        self.files.pop(QUALITY_SUMMARY_NAME, None)

    def warnings(self) -> list[str]:
        """What the result says of the health files: what was left out."""
        return list(self.notes)


def read_health(run: HealthPaths) -> RunHealth:
    """Read the run's health files, each once; a file that is missing is no problem (a run
    made without health checks), one that cannot be read is a :class:`RunFileError` naming it."""
    health = RunHealth(other_runs=run.other_runs_in_directory())
    if _readable(run.quality_summary, health):
        _read_summary(run.quality_summary, health)
    if _readable(run.rollout_verdicts, health):
        health.verdicts = _read_verdicts(run.rollout_verdicts, health)
    if _readable(run.failures, health):
        _read_failures(run.failures, health)
    return health


def _readable(path: Path, health: RunHealth) -> bool:
    """Whether the health file ``path`` is there to read: a file that is not there is no
    problem; one that is no regular file (a FIFO, a directory, a link to nothing) or links
    out of the run's directory is left out, and the result says so."""
    if not os.path.lexists(path):
        return False
    problem = not_a_file_reason(path)
    if problem is None and not path.exists():
        problem = f"{path} is a symlink to nothing ({path.readlink()})"
    if problem is None:
        try:
            inside(path.parent, path, named_by="NeMo Gym's health file")
        except PathRefused as refused:
            problem = str(refused)
    if problem is None:
        return True
    health.notes.append(f"{problem}: it is left out of the export")
    return False


def _read_summary(path: Path, health: RunHealth) -> None:
    data = read_bounded(
        path,
        MAX_FILE_BYTES,
        "Health report",
        "NeMo Gym's is a few kilobytes: is it the right file?",
    )
    health.summary_path = path
    health.sizes[path] = len(data)
    summary = load_json(data, path, what="quality summary")
    run = summary.get("run") if isinstance(summary, dict) else None
    if not isinstance(run, dict):
        raise RunFileError(
            f"Malformed quality summary {path}: no `run` section (NeMo Gym's rollout health "
            "checks write one)"
        )
    artifacts = run.get("artifacts")
    records = artifacts.get("records") if isinstance(artifacts, dict) else None
    health.summary_records = records if isinstance(records, int) else None
    numbers = {k: v for k, v in run.items() if k != "ignored_checks"}
    if isinstance(artifacts, dict):  # each check's coverage stays in the file, uploaded whole
        numbers["artifacts"] = {k: v for k, v in artifacts.items() if k != "coverage"}
    health.metrics.update(finite_numbers(numbers, HEALTH_PREFIX.rstrip("/")))
    verdicts = run.get("verdicts")
    if isinstance(verdicts, dict):
        present = [
            name
            for name in _WORST_FIRST
            if type(count := verdicts.get(name)) is int and count > 0  # not a bool
        ]
        health.verdict = present[0] if present else None
    health.files[QUALITY_SUMMARY_NAME] = data


def _worst_first(verdict: str) -> int:
    """A verdict's place, worst first (one Gym does not name: after them)."""
    return _WORST_FIRST.index(verdict) if verdict in _WORST_FIRST else len(_WORST_FIRST)


def _read_verdicts(path: Path, health: RunHealth) -> dict[RolloutKey, str]:
    health.verdicts_path = path
    verdicts: dict[RolloutKey, str] = {}
    report = _Report(path, "rollout verdicts")
    for number, row in report.rows():
        verdict = row.get("verdict") if isinstance(row, dict) else None
        if not isinstance(row, dict) or not isinstance(verdict, str):
            raise RunFileError(f"Malformed rollout verdicts {path}: line {number} has no verdict")
        key = rollout_key(row)
        health.verdict_lines[key] += 1
        verdicts[key] = min(verdicts.get(key, verdict), verdict, key=_worst_first)
        if isinstance(said := row.get("rollout_id"), str):
            health.verdict_ids[key] = said
    report.keep(health, ROLLOUT_VERDICTS_NAME, "its verdicts are in the samples table")
    return verdicts


def _read_failures(path: Path, health: RunHealth) -> None:
    attempts = terminal = 0
    report = _Report(path, "failures file")
    for _, row in report.rows():
        attempts += 1
        terminal += isinstance(row, dict) and row.get("_ng_failure_terminal") is True
    health.metrics[FAILURES_ATTEMPTS_METRIC] = float(attempts)
    health.metrics[FAILURES_TERMINAL_METRIC] = float(terminal)
    report.keep(health, path.name, "its attempts are counted")


class _Report:
    """One of Gym's JSON-lines reports, read once: its rows, its size, and its lines while they
    fit what evalexport uploads of it (:data:`MAX_FILE_BYTES`)."""

    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        self.what = what
        self.size = 0
        self.lines: list[bytes] = []

    def rows(self) -> Iterator[tuple[int, object]]:
        """Each row that is not blank, with its line number; a line that is no JSON is a
        :class:`RunFileError` naming it."""
        for number, line in numbered_lines(self.path):
            self.size += len(line)
            if not line.strip():
                continue
            row = load_json(line, f"{self.path}, line {number}", what=self.what)
            if self.size <= MAX_FILE_BYTES:
                self.lines.append(line)
            else:
                self.lines.clear()
            yield number, row

    def keep(self, health: RunHealth, name: str, kept: str) -> None:
        """The report's size, and its lines to upload as ``name``, or why they are not."""
        health.sizes[self.path] = self.size
        if self.size <= MAX_FILE_BYTES:
            health.files[name] = b"".join(self.lines)
        else:
            health.notes.append(
                f"{self.path} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB, the most "
                f"evalexport uploads of it: it is not uploaded ({kept})"
            )


def with_health(
    metrics: Mapping[str, float], texts: Mapping[str, str], health: RunHealth
) -> tuple[dict[str, float], dict[str, str], list[str]]:  # RunHealth.joined
    """The run's metrics and texts with its health metrics and verdict added, and a warning
    for each health name a metric of the run already has (an agent named ``health``): the
    run's own value is kept."""
    merged = dict(metrics)
    merged_texts = dict(texts)
    collided = sorted(name for name in health.metrics if name in merged)
    merged.update({k: v for k, v in health.metrics.items() if k not in merged})
    if health.verdict is not None:
        if VERDICT_KEY in merged_texts or VERDICT_KEY in merged:
            collided.append(VERDICT_KEY)
        else:
            merged_texts[VERDICT_KEY] = health.verdict
    warnings = [
        f"{name} is both a metric of the run and a health value of NeMo Gym's; the run's is logged"
        for name in collided
    ]
    return merged, merged_texts, warnings
