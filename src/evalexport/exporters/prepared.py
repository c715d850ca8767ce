"""A run read once (SPEC §3.3a): what the dry run and the export of a tracking exporter share.

:func:`prepare` opens each file of the run once, hashes it while it parses it and, when the
export uploads the rollouts, writes Gym's rollouts table from the same pass. The dry run
describes the :class:`PreparedRun`; the export prepares under the export lock and sends it, and
its marker names the bytes that were read. The two cannot disagree: they share one value.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import final

from evalexport.exporters.tables import write_rollouts_table, write_table_rows
from evalexport.guard import fingerprint_of
from evalexport.metrics import FlatMetrics, flatten_metrics
from evalexport.run import ExportableConfig, Rollout, RunArtifacts, RunFileError

__all__ = ["PreparedRun", "for_payload", "prepare"]


@final
@dataclass(frozen=True)
class PreparedRun:
    """Everything an export sends, read from the run's files once."""

    run: RunArtifacts
    fingerprint: str
    """``sha256:…`` of the bytes read (:func:`evalexport.guard.run_fingerprint` of them)."""
    aggregate_metrics: bytes
    """The aggregate-metrics file as it is: uploaded as it is."""
    metrics: FlatMetrics
    """The aggregate metrics, flattened (:func:`~evalexport.metrics.flatten_metrics`)."""
    saved_config: ExportableConfig
    """The saved config as exporters send it: masked again."""
    rollout_count: int
    rollouts_table: Path | None
    """The rollouts as Gym's one-column table (:mod:`.tables`), if it was asked for: in a
    scratch directory of its own, removed by :meth:`discard`."""

    def warnings(self) -> list[str]:
        """What the export changes on the way, for the log: live-looking secrets masked,
        non-finite metrics."""
        return [
            warning
            for warning in (
                self.saved_config.warning(self.run.saved_config),
                self.metrics.non_finite_warning(),
            )
            if warning
        ]

    def discard(self) -> None:
        """Remove what :func:`prepare` wrote (the rollouts table); the run is untouched."""
        if self.rollouts_table is not None:
            shutil.rmtree(self.rollouts_table.parent, ignore_errors=True)


def prepare(
    run: RunArtifacts, *, rollouts_table: bool = False, parse_rollouts: bool = True
) -> PreparedRun:
    """Read the aggregate metrics, the saved config and the rollouts, in that order, each
    opened once; raise :class:`RunFileError` naming the first file that cannot be exported.

    ``rollouts_table``: write the rollouts table while the rollouts are read (the caller
    removes it with :meth:`~PreparedRun.discard`). ``parse_rollouts=False``: only hash the rollouts and
    count their lines, for an exporter that sends none of them.
    """
    metrics_bytes = run.read_file(run.aggregate_metrics)
    metrics = flatten_metrics(run.parse_aggregate_metrics(metrics_bytes))
    config_bytes = run.read_file(run.saved_config)
    saved_config = run.exportable_config(run.parse_saved_config(config_bytes))
    rollouts_digest = hashlib.sha256()
    count = 0

    def counted() -> Iterator[Rollout]:
        nonlocal count
        for rollout in run.iter_rollouts(rollouts_digest):
            count += 1
            yield rollout

    table: Path | None = None
    scratch = Path(tempfile.mkdtemp(prefix="evalexport-rollouts-")) if rollouts_table else None
    try:
        if scratch is not None:
            table = write_table_rows(counted(), scratch / "rollouts.json")
        elif not parse_rollouts:
            count = run.count_rollouts(rollouts_digest)
        else:
            for _ in counted():
                pass
        if count == 0:
            raise RunFileError(run.no_records_message)
    except BaseException:  # a bad line or a stop signal: leave nothing behind
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        raise
    fingerprint = fingerprint_of(
        [
            (run.rollouts.name, rollouts_digest.digest()),
            (run.aggregate_metrics.name, hashlib.sha256(metrics_bytes).digest()),
            (run.saved_config.name, hashlib.sha256(config_bytes).digest()),
        ]
    )
    return PreparedRun(
        run=run,
        fingerprint=fingerprint,
        aggregate_metrics=metrics_bytes,
        metrics=metrics,
        saved_config=saved_config,
        rollout_count=count,
        rollouts_table=table,
    )


def for_payload(
    run: RunArtifacts, prepared: PreparedRun | None, scratch: Path, *, rollouts_table: bool
) -> tuple[PreparedRun, Path | None]:
    """What a worker payload is built from, and the rollouts table if it is wanted: what the
    export read (``prepared``), or, for a payload built on its own (a benchmark, a test), the
    run read now, its table written into ``scratch``."""
    if prepared is not None:
        return prepared, prepared.rollouts_table if rollouts_table else None
    table = write_rollouts_table(run, scratch / "rollouts.json") if rollouts_table else None
    return prepare(run), table
