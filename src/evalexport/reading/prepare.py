"""A run read once: :func:`prepare` opens the aggregate metrics, the saved config and the
rollouts once each, hashes them while it parses them, and hands the export (or the dry run)
one :class:`PreparedRun`; the fingerprint of those bytes is :func:`fingerprint_of` them, in
the order of :func:`fingerprinted_files`, the same function and order :func:`run_fingerprint`
uses to read a run again."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, ClassVar, Protocol, final

from evalexport.egress.gate import current as current_gate
from evalexport.gym.health import RunHealth
from evalexport.metrics import FlatMetrics, flatten_metrics
from evalexport.progress import Progress, reading_progress
from evalexport.reading.evaluation_times import EvaluationTimes, TimesSeen
from evalexport.reading.files import (
    CHUNK,
    Digest,
    ExportableConfig,
    RunFileError,
    RunPaths,
    exportable_config,
    open_regular,
    parse_aggregate_metrics,
    parse_saved_config,
    read_file,
)
from evalexport.reading.rollouts import (
    Cursor,
    Rollout,
    count_rollouts,
    open_rollouts,
    read_rollouts,
)

__all__ = [
    "PartRead",
    "PartReadElsewhere",
    "PreparedRun",
    "RolloutsSink",
    "fingerprint_of",
    "fingerprinted_files",
    "prepare",
    "run_fingerprint",
]


def fingerprinted_files(run: RunPaths) -> tuple[Path, Path, Path]:
    """The files a fingerprint covers, in the order it hashes them."""
    return (run.rollouts, run.aggregate_metrics, run.saved_config)


def fingerprint_of(file_digests: Iterable[tuple[str, bytes]]) -> str:
    """``sha256:<hex>`` of ``(file name, sha256 digest of its bytes)`` pairs, in the order of
    :func:`fingerprinted_files`: for a caller that hashed the files while it read them."""
    digest = hashlib.sha256()
    for name, file_digest in file_digests:
        digest.update(name.encode() + b"\0")
        digest.update(file_digest)
    return f"sha256:{digest.hexdigest()}"


def run_fingerprint(run: RunPaths) -> str:
    """``sha256:<hex>`` over the rollouts, aggregate-metrics and saved-config files, read now."""
    digests: list[tuple[str, bytes]] = []
    for path in fingerprinted_files(run):
        file_digest = hashlib.sha256()
        with open_regular(path) as handle:
            while chunk := handle.read(CHUNK):
                file_digest.update(chunk)
        digests.append((path.name, file_digest.digest()))
    return fingerprint_of(digests)


@final
@dataclass(frozen=True)
class PreparedRun:
    """Everything an export sends, read from the run's files once."""

    SAMPLES_FILE: ClassVar[str] = "samples.json"
    """The typed samples table's name (:attr:`samples_table`)."""

    run: RunPaths
    fingerprint: str
    """``sha256:…`` of the bytes read (:func:`fingerprint_of` them)."""
    aggregate_metrics: bytes
    """The aggregate-metrics file as it leaves: as it is, unless the export's gate masked a
    secret in it (:meth:`evalexport.egress.Egress.document`)."""
    metrics: FlatMetrics
    """The aggregate metrics, flattened (:func:`~evalexport.metrics.flatten_metrics`)."""
    saved_config: ExportableConfig
    """The saved config as exporters send it: masked again, and through the export's gate."""
    rollout_count: int
    evaluation: EvaluationTimes
    """When the evaluation ran (:mod:`evalexport.reading.evaluation_times`): the remote run's times."""
    rollouts_table: Path | None = None
    """The rollouts as Gym's one-column table, if it was asked for: in a scratch directory of
    its own, removed by :meth:`discard`."""
    scratch: list[Path] = field(default_factory=list)
    """Directories written while the run was read (the table's), removed by :meth:`discard`."""
    released: Callable[[Path], None] | None = None
    """Told of each scratch directory :meth:`discard` removed (the reaper, which would
    otherwise remove it if this process died)."""
    health: RunHealth = field(default_factory=RunHealth)
    """What NeMo Gym's health files hold (:mod:`evalexport.gym.health`), if they were
    asked for, their copies to upload through the export's gate; empty for a run without
    them."""

    @property
    def samples_table(self) -> Path | None:
        """The typed samples table (:attr:`SAMPLES_FILE`: a column per value), written beside
        :attr:`rollouts_table` in the same pass, if there is one."""
        table = self.rollouts_table
        if table is None or not (samples := table.parent / self.SAMPLES_FILE).is_file():
            return None
        return samples

    def warnings(self) -> list[str]:
        """What the export changes on the way: live-looking secrets masked, non-finite
        metrics, no metric at all. The pipeline ends the result with them (``Note: …``), the
        dry run's and the export's alike."""
        return [
            warning
            for warning in (
                self.saved_config.warning(self.run.saved_config),
                self.metrics.non_finite_warning(),
                self.metrics.empty_warning(self.run.aggregate_metrics),
                self.evaluation.warning(),
                *self.health.warnings(),
            )
            if warning
        ]

    def discard(self) -> None:
        """Remove what :func:`prepare` wrote (the rollouts table); the run is untouched."""
        for directory in self.scratch:
            shutil.rmtree(directory, ignore_errors=True)
            if self.released is not None:
                self.released(directory)


def _size_or_zero(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # the read names the problem


class _ReportingDigest:
    """A digest that also reports how many of the file's ``total`` bytes it has been fed."""

    def __init__(self, digest: Digest, report: Progress, total: int) -> None:
        self._digest = digest
        self._report = report
        self._total = total
        self._done = 0
        self._weight = 1.0
        self._reported = 0

    def update(self, data: bytes, /) -> None:
        self._digest.update(data)
        self._done += len(data)
        done = self._done
        if self._weight != 1:
            done = min(round(done * self._weight), self._total)
        self._reported = max(self._reported, done)  # never back, if the helper fails
        self._report(self._reported, max(self._total, self._reported))

    def read_elsewhere_from(self, middle: int | None) -> None:
        """The file from ``middle`` on is read by another process meanwhile, about as fast:
        each byte this one reads stands for ``total / middle`` of the whole (``None``: this
        process reads all)."""
        self._weight = self._total / middle if middle else 1.0


RolloutsSink = Callable[[Iterator[Rollout]], None]
"""Consumes every rollout while :func:`prepare` reads them (writes Gym's rollouts table)."""


@final
@dataclass(frozen=True)
class PartRead:
    """What another process read of the rollouts file, from a line boundary to its end."""

    start: int
    """Where it began: the first line that starts at :attr:`PartReadElsewhere.middle` or after."""
    size_bytes: int
    """How many bytes it read."""
    sha256: bytes
    """The SHA-256 digest of those bytes: this process hashes them again, in the file's order,
    for the fingerprint, and refuses the run if they are not the same bytes."""
    rollouts: int
    earliest: float | None
    """The earliest of the rollouts' timestamps (:class:`TimesSeen`), ``None`` for none."""
    latest: float | None
    left_out: int


class PartReadElsewhere(Protocol):
    """The end of the rollouts file, read by another process while this one reads the start
    (:mod:`evalexport.tables.split_read`)."""

    @property
    def middle(self) -> int:
        """A byte offset: the part read elsewhere begins with the first line that starts
        there or after, where this process stops."""

    def wait(self) -> PartRead | None:
        """What it read, once it is done; ``None`` when it could not read the part (this
        process then reads it itself, so every message and verdict is the sequential
        reader's)."""

    def take(self) -> None:
        """Its part is the run's: its bytes are those hashed here, from where this process
        stopped (its rows join the tables; without this call they are left out)."""


def _read_here_and_elsewhere(
    run: RunPaths, digest: Digest, elsewhere: PartReadElsewhere | None, joined: list[PartRead]
) -> Iterator[Rollout]:
    """The rollouts this process reads: all of them, or those before ``elsewhere.middle``
    when the rest was read elsewhere (then in ``joined``), its bytes hashed here in order."""
    with open_rollouts(run) as handle:
        cursor = Cursor()
        reporting = digest if isinstance(digest, _ReportingDigest) else None
        if elsewhere is not None:
            if reporting is not None:
                reporting.read_elsewhere_from(elsewhere.middle)
            yield from read_rollouts(run, handle, digest, cursor=cursor, end=elsewhere.middle)
            part = elsewhere.wait()
            if part is not None and part.start == cursor.offset:  # where this read stopped
                _hash_the_rest(run, handle, digest, part)
                elsewhere.take()
                joined.append(part)
                return
            if reporting is not None:
                reporting.read_elsewhere_from(None)
        yield from read_rollouts(run, handle, digest, cursor=cursor)


def _hash_the_rest(run: RunPaths, handle: BinaryIO, digest: Digest, part: PartRead) -> None:
    """Feed ``digest`` the rest of the file; refuse it if it is not what ``part`` read."""
    own = hashlib.sha256()
    size = 0
    while chunk := handle.read(CHUNK):
        digest.update(chunk)
        own.update(chunk)
        size += len(chunk)
    if size != part.size_bytes or own.digest() != part.sha256:
        raise RunFileError(
            f"The rollouts file {run.rollouts} changed while it was read (its bytes from "
            f"{part.start} on were not the same when read twice): export it once whatever "
            "writes it has finished"
        )


def prepare(
    run: RunPaths,
    *,
    parse_rollouts: bool = True,
    rollouts_sink: RolloutsSink | None = None,
    rollouts_table: Path | None = None,
    scratch: Iterable[Path] = (),
    released: Callable[[Path], None] | None = None,
    health: RunHealth | None = None,
    elsewhere: PartReadElsewhere | None = None,
) -> PreparedRun:
    """Read the aggregate metrics, the saved config and the rollouts, in that order, each
    opened once; raise :class:`RunFileError` naming the first file that cannot be exported.

    ``rollouts_sink`` consumes the rollouts as they are read, ``rollouts_table`` is the file it
    writes and ``scratch`` the directories it wrote into (removed by
    :meth:`~PreparedRun.discard`, and here if the read fails). ``parse_rollouts=False``: only
    hash the rollouts and count their lines, for an exporter that sends none of them.
    ``health``: NeMo Gym's health files as read
    (:func:`~evalexport.gym.health.read_health`), checked here against the rollouts.
    ``elsewhere``: the end of the rollouts file, read by another process (its rollouts are
    not given to ``rollouts_sink``: the caller that started it joins its rows to the sink's);
    its count and times are added here, and its bytes hashed in order.
    """
    scratch = list(scratch)
    try:
        metrics_bytes = read_file(run, run.aggregate_metrics)
        metrics = flatten_metrics(parse_aggregate_metrics(run, metrics_bytes))
        config_bytes = read_file(run, run.saved_config)
        saved_config = exportable_config(parse_saved_config(run, config_bytes))
        rollouts_digest = hashlib.sha256()
        read: Digest = rollouts_digest
        if (report := reading_progress()) is not None:
            read = _ReportingDigest(rollouts_digest, report, _size_or_zero(run.rollouts))
        count = 0
        seen = TimesSeen()
        joined: list[PartRead] = []
        if health is not None and health.verdicts is not None:
            elsewhere = None  # each rollout is told against the verdicts here: all read here

        def counted() -> Iterator[Rollout]:
            nonlocal count
            for rollout in _read_here_and_elsewhere(run, read, elsewhere, joined):
                count += 1
                seen.see(rollout.record)
                if health is not None:
                    health.see(rollout.record, rollout.ordinal)
                yield rollout
            for part in joined:
                count += part.rollouts
                seen.merge(part.earliest, part.latest, part.left_out)

        if rollouts_sink is not None:
            rollouts_sink(counted())
        elif not parse_rollouts:
            count = count_rollouts(run, read)
        else:
            for _ in counted():
                pass
        if count == 0:
            raise RunFileError(run.no_records_message)
        if health is not None:
            health.finish(count)
    except BaseException:  # a bad line or a stop signal: leave nothing behind
        for directory in scratch:
            shutil.rmtree(directory, ignore_errors=True)
            if released is not None:
                released(directory)
        raise
    digests = {
        run.rollouts: rollouts_digest.digest(),
        run.aggregate_metrics: hashlib.sha256(metrics_bytes).digest(),
        run.saved_config: hashlib.sha256(config_bytes).digest(),
    }
    # What leaves of the files beside the rollouts passes the export's gate (the rows pass
    # it as the tables are written).
    gate = current_gate()
    saved_config = ExportableConfig(gate.value(saved_config.config), saved_config.masked_paths)
    if health is not None:
        health.files = {
            name: gate.document(data, lines=name.endswith(".jsonl"))
            for name, data in health.files.items()
        }
    return PreparedRun(
        run=run,
        fingerprint=fingerprint_of((path.name, digests[path]) for path in fingerprinted_files(run)),
        aggregate_metrics=gate.document(metrics_bytes, lines=False),
        metrics=metrics,
        saved_config=saved_config,
        rollout_count=count,
        evaluation=seen.times(fingerprinted_files(run)),
        rollouts_table=rollouts_table,
        scratch=scratch,
        released=released,
        health=health if health is not None else RunHealth(),
    )
