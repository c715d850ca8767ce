"""What an exporter declares and resolves (plugin API 4): its kind, its options, its target,
its SDK, and what the spec does for an exporter that says nothing of its own.

Values only, no exporter: :mod:`.base` (the spec itself) and :mod:`.compat` (earlier guides'
forms) both build on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalexport.isolation.delivery import WorkerSpec
from evalexport.metrics import flatten_metrics
from evalexport.reading import PreparedRun, RunFileError
from evalexport.results import DryRunPlan, PlannedFile
from evalexport.run import RunArtifacts

__all__ = [
    "KINDS",
    "ExporterConfig",
    "ExporterKind",
    "OptionError",
    "ProgressUnit",
    "SdkConfig",
    "Target",
    "default_plan",
    "default_read",
]

ExporterKind = Literal["tracking", "directory", "output"]
"""What an exporter does with a run, which decides what the pipeline does around it:

* ``tracking``: makes one remote run per target (MLflow, W&B), so it is guarded: an export
  marker records each target's run and a rerun skips it (SPEC §3.3); the run must hold its
  aggregate metrics and saved config, which the fingerprint covers;
* ``directory``: uploads the run directory as it is (EvalRDL), so the directory must hold one
  run, its metrics and config, and every file in it must be readable;
* ``output``: writes an output of its own (ATIF files) from the rollouts, which is its own
  proof of an export.
"""
KINDS: Final[tuple[ExporterKind, ...]] = get_args(ExporterKind)

ProgressUnit = Literal["bytes", "steps"]
"""What ``progress(done, total)`` counts: ``bytes`` of input read, or ``steps`` of a worker."""


class ExporterConfig(BaseModel):
    """Options every exporter takes. Unknown options are refused, never ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rollouts_jsonl_fpath: Path = Field(
        description="The run's rollouts file; every other file of the run is found beside it."
    )

    @field_validator("rollouts_jsonl_fpath", mode="before")
    @classmethod
    def _names_a_file(cls, value: object) -> object:
        """An empty path would be the current directory: never what a user meant."""
        if isinstance(value, str) and not value.strip():
            raise ValueError("expected the path of the run's rollouts file, got an empty value")
        return value

    dry_run: bool = Field(
        default=False,
        description="Run every check and print what would be exported, without exporting.",
    )


class SdkConfig(ExporterConfig):
    """Options of an exporter whose SDK runs in a worker: ``requirement`` picks the SDK's
    environment (set its default to your SDK's requirement)."""

    requirement: str | list[str] = Field(
        description="The SDK requirement(s) of the exporter's environment, e.g. PKG==VER; "
        "a new pin builds a new environment."
    )

    def requirements(self) -> tuple[str, ...]:
        """``requirement`` as a tuple (one requirement, or a list)."""
        given = self.requirement
        return (given,) if isinstance(given, str) else tuple(given)


class OptionError(ValueError):
    """The options given to an exporter are unknown or invalid (exit code 2)."""


@dataclass(frozen=True, kw_only=True)
class Target:
    """Where one export goes, resolved once (:meth:`Exporter.resolve`) and handed to every
    hook after it. An exporter subclasses it (a frozen dataclass, ``kw_only=True``) for the
    settings its own hooks read: the tracking URI, the experiment, the output directory."""

    where: str
    """Where the run goes, in words a user recognizes (a URL, a path, a project): shown masked,
    and the key of a tracking exporter's marker record."""
    settings: Mapping[str, str] = field(default_factory=dict)
    """Where each target setting came from (``+mlflow_tracking_uri``, ``MLFLOW_TRACKING_URI
    from the environment``, ``default``): the dry run and the result say so."""
    refusal: str | None = None
    """Why the run cannot be exported here, beyond the checks every exporter of its kind gets
    (found without opening a file of the run, before anything is read, built or written), or
    ``None``."""
    already_exported: str | None = None
    """What says this export's output is there already (ATIF's ``manifest.jsonl``): a batch's
    rerun (``plan run``, Slurm) skips it. Tracking exporters need nothing here: their export
    marker makes a rerun skip."""
    worker: WorkerSpec | None = None
    """The worker that delivers, for an exporter with an :attr:`Exporter.sdk`."""


def default_read(kind: ExporterKind, run: RunArtifacts) -> PreparedRun | None:
    """The export's read of an exporter of ``kind`` that reads nothing of its own."""
    if kind == "directory" and (reason := run.unreadable_file_reason()):
        raise RunFileError(reason)
    if kind == "tracking":
        from evalexport.reading import prepare

        return prepare(run, parse_rollouts=False)
    if run.holds_no_rollouts():
        raise RunFileError(run.no_records_message)
    return None


def default_plan(
    exporter: str, run: RunArtifacts, target: Target, prepared: object, *, metrics: bool
) -> DryRunPlan:
    """The dry run's plan of an exporter that says nothing of its own: the run's files and,
    with ``metrics``, the aggregate metrics as flattened."""
    files = [
        PlannedFile(path=str(path), size_bytes=path.stat().st_size)
        for path in (run.rollouts, run.aggregate_metrics, run.saved_config)
        if path.is_file()
    ]
    metric_names: list[str] = []
    tag_names: list[str] = []
    if metrics:
        flat = (
            prepared.metrics
            if isinstance(prepared, PreparedRun)
            else flatten_metrics(run.read_aggregate_metrics())
        )
        metric_names, tag_names = list(flat.metrics), list(flat.texts)
    held = metric_names + tag_names
    return DryRunPlan(
        exporter=exporter,
        target=target.where,
        files=files,
        sections={"aggregate metrics of the run": held} if held else {},
        metric_names=metric_names,
        tag_names=tag_names,
    )
