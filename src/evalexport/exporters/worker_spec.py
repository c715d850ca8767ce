"""The one typed value that describes an isolated exporter's worker for one export."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, final

__all__ = ["DEFAULT_TIME_LIMIT", "WorkerSpec"]

DEFAULT_TIME_LIMIT: Final = 3600.0
"""Seconds a worker may run unless its exporter says otherwise (SPEC §3.4)."""


@final
@dataclass(frozen=True)
class WorkerSpec:
    """What an isolated export's worker needs, from the export's options
    (:meth:`~evalexport.exporters.isolated.IsolatedExporter.worker`)."""

    requirements: tuple[str, ...]
    """The SDK's requirements: the environment is built once per list (and Python)."""
    time_limit: float = DEFAULT_TIME_LIMIT
    """Seconds before the worker is stopped (``$EVALEXPORT_WORKER_TIME_LIMIT`` overrides)."""
    environment: Mapping[str, str] = field(default_factory=dict)
    """Environment variables for the worker only (never secrets: see ``worker_secrets``), such
    as the SDK's timeouts and retries."""
    local_store: Path | None = None
    """A local store file the worker writes into, which other exports may share (an embedded
    MLflow database): workers writing into one store run one at a time."""
    answers_dry_runs: bool = False
    """The worker body takes a dry run's payload (``dry_run`` true in it) and answers what an
    export would find at the target, changing nothing: a dry run asks it when the
    environment is built (a dry run builds none)."""
