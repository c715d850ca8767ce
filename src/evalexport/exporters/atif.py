"""The ``atif`` exporter: one ATIF trajectory file per rollout (SPEC §4).

The files are those NeMo Gym's own strict exporter writes (``gym eval export --format atif``
in nemo-gym 0.7.0): ``<task>-<rollout>.json`` per rollout and a ``manifest.jsonl`` naming each
file with its indices and SHA-256. Strict: a row Gym would refuse (coverage gaps, a failed or
incomplete model or tool call, a field ATIF would drop, a duplicate key, a second agent) fails
the whole export, every such row is named, and nothing is written. ``+allow_gaps`` opts in to
rows whose only gaps are the listed codes, ``+relax`` to the listed relaxations of the strict
profile (:data:`evalexport.trajectory.relaxations.RELAXATIONS`).

Output goes to a temporary sibling of ``output_dirpath`` that is renamed into place only when
every trajectory was written. A dry run converts every row in memory: it fails exactly when the
export would.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from evalexport.exporters.base import Exporter, ExporterConfig
from evalexport.results import DryRunPlan, ExportResult, PlannedFile, SkipReason
from evalexport.run import RunArtifacts
from evalexport.trajectory.convert import ATIF_SCHEMA_VERSION, TrajectoryIdentity
from evalexport.trajectory.files import ConvertedRow, FileConversion, convert_file
from evalexport.trajectory.manifest import MANIFEST_NAME, staged_output_problem
from evalexport.trajectory.relaxations import RELAXATIONS, Relaxation

if TYPE_CHECKING:
    from evalexport.exporters.prepared import PreparedRun

__all__ = ["AtifConfig", "AtifExporter"]

_LISTED_ROWS = 20


class AtifConfig(ExporterConfig):
    """Options of the ``atif`` exporter (SPEC §4)."""

    output_dirpath: Path = Field(
        description="Directory to create for the trajectories; it must not exist yet."
    )
    agent_version: str = Field(description="Version of the agent that produced the run.")
    session_id: str | None = Field(
        default=None, description="ATIF session id; default: the rollouts file's stem."
    )
    agent_name: str | None = Field(
        default=None, description="ATIF agent name; default: each rollout's agent_ref.name."
    )
    allow_gaps: list[str] = Field(
        default=[],
        description=(
            "Coverage gap codes to export anyway (e.g. [resolution_unavailable]); each such "
            "trajectory lists its gaps in extra.nemo_gym.gaps. Default: none (strict)."
        ),
    )
    relax: list[Relaxation] = Field(
        default=[],
        description=(
            f"Relaxations of Gym's strict profile to accept: {', '.join(RELAXATIONS)} (see the "
            "README); each trajectory that needs one lists it in extra.nemo_gym.relaxations. "
            "Default: none (strict)."
        ),
    )

    @field_validator("agent_version", "session_id", "agent_name")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must contain a non-whitespace character")
        return value


class AtifExporter(Exporter[AtifConfig]):
    """Write each rollout's ``ng_trajectory`` as one ATIF v1.7 trajectory file, as NeMo Gym's
    strict exporter does, atomically, with ``manifest.jsonl``."""

    name = "atif"
    summary = f"Write each rollout's ng_trajectory as an {ATIF_SCHEMA_VERSION} trajectory file."
    Config = AtifConfig
    needs_metrics_and_config = False

    def target(self, run: RunArtifacts, config: AtifConfig) -> str:
        return str(config.output_dirpath.absolute())

    def unexportable_reason(self, run: RunArtifacts, config: AtifConfig) -> str | None:
        reason = super().unexportable_reason(run, config)
        output = config.output_dirpath.absolute()
        if reason is None and os.path.lexists(output):
            reason = (
                f"Output path already exists: {output}. "
                "Choose a new +output_dirpath or remove the old one."
            )
        return reason

    def _identity(self, run: RunArtifacts, config: AtifConfig) -> TrajectoryIdentity:
        return TrajectoryIdentity(
            session_id=config.session_id or run.stem,
            agent_version=config.agent_version,
            agent_name=config.agent_name,
        )

    def _convert(
        self,
        run: RunArtifacts,
        config: AtifConfig,
        output: Path | None,
        on_row: Callable[[ConvertedRow], None] | None = None,
    ) -> FileConversion | ExportResult:
        """Convert every row: the conversion, or the failed result when the export must fail."""
        try:
            conversion = convert_file(
                run.rollouts,
                self._identity(run, config),
                output=output,
                on_row=on_row,
                allowed_gaps=config.allow_gaps,
                relaxations=config.relax,
                progress=self.progress,
            )
        except OSError as error:
            where = error.filename or run.rollouts
            return self.failed(
                run, f"Cannot convert {run.rollouts}: {error.strerror or error} ({where})"
            )
        if conversion.rejected:
            return self.failed(run, _rejection(run, conversion), rejected_rows=conversion.rejected)
        if problem := conversion.problem(run.rollouts):
            return self.failed(run, problem)
        return conversion

    def _dry_run_result(
        self, run: RunArtifacts, config: AtifConfig, prepared: PreparedRun | None = None
    ) -> ExportResult:
        """The conversion without its files: ATIF prepares nothing (``prepared`` is ``None``),
        the conversion is its one read of the run."""
        outcome = self._convert(run, config, output=None)
        if isinstance(outcome, ExportResult):
            return outcome
        plan = DryRunPlan(
            exporter=self.name,
            target=self.target(run, config),
            files=[PlannedFile(path=str(run.rollouts), size_bytes=run.rollouts.stat().st_size)],
        )
        return ExportResult.succeeded(
            self.name,
            str(run.run_dir),
            f"dry run: {outcome.converted} trajectories of {run.rollouts.name} would be written "
            f"to {plan.target}",
            plan=plan,
            dry_run=True,
            **_counts(outcome),
        )

    def already_exported(self, run: RunArtifacts, config: AtifConfig) -> ExportResult | None:
        """The output directory holds a ``manifest.jsonl``: it is written last, into the
        staging directory renamed into place, so its presence means a complete export."""
        output = config.output_dirpath.absolute()
        if not (output / MANIFEST_NAME).is_file():
            return None
        return ExportResult.skipped(
            self.name,
            str(run.run_dir),
            f"{output} already holds this export's trajectories (manifest.jsonl)",
            SkipReason.ALREADY_EXPORTED,
            output_dirpath=str(output),
        )

    def _export(
        self, run: RunArtifacts, config: AtifConfig, *, fingerprint: str | None
    ) -> ExportResult:
        output = config.output_dirpath.absolute()
        try:
            created_parents = _make_parents(output.parent)
            staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.partial-", dir=output.parent))
        except OSError as error:
            return self.failed(
                run, f"Cannot create the output directory {output}: {error.strerror or error}"
            )
        try:
            with (staging / MANIFEST_NAME).open("w", encoding="utf-8") as manifest:

                def add_to_manifest(row: ConvertedRow) -> None:
                    manifest.write(row.manifest_line() + "\n")

                outcome = self._convert(run, config, staging, add_to_manifest)
            if isinstance(outcome, ExportResult):
                return outcome
            if problem := staged_output_problem(staging, outcome.converted):
                return self.failed(
                    run,
                    f"ATIF export of {run.rollouts} failed its own check of the files it wrote, "
                    f"so nothing was written to {output}: {problem}. This is a bug in "
                    "evalexport; please report it with the rollouts file.",
                )
            if os.path.lexists(output):
                return self.failed(run, f"Output path was created during export: {output}")
            staging.chmod(0o755)
            staging.rename(output)
        finally:
            if staging.exists():
                shutil.rmtree(staging)
                for parent in created_parents:
                    _remove_if_empty(parent)
        return ExportResult.succeeded(
            self.name,
            str(run.run_dir),
            f"wrote {outcome.converted} ATIF trajectories to {output}",
            output_dirpath=str(output),
            manifest=str(output / MANIFEST_NAME),
            **_counts(outcome),
        )


def _counts(conversion: FileConversion) -> dict[str, Any]:
    counts: dict[str, Any] = {"trajectory_count": conversion.converted}
    if conversion.trajectories_with_gaps:
        counts["trajectories_with_gaps"] = conversion.trajectories_with_gaps
        counts["gap_counts"] = dict(sorted(conversion.gap_counts.items()))
    if conversion.trajectories_relaxed:
        counts["trajectories_relaxed"] = conversion.trajectories_relaxed
        counts["relaxation_counts"] = dict(sorted(conversion.relaxation_counts.items()))
    return counts


def _rejection(run: RunArtifacts, conversion: FileConversion) -> str:
    rejected = conversion.rejected
    listed = "\n".join(f"- {row}" for row in rejected[:_LISTED_ROWS])
    more = len(rejected) - _LISTED_ROWS
    if more > 0:
        listed += f"\n- ... and {more} more rows"
    message = (
        f"ATIF export rejected {len(rejected)} of {conversion.rows} rows of {run.rollouts}; "
        f"nothing was written:\n{listed}"
    )
    if agents := conversion.agents_problem(run.rollouts):
        message += f"\n{agents}"
    message += (
        f"\n`evalexport inspect {run.rollouts}` tells which +allow_gaps or +relax options "
        "(relaxations of Gym's strict profile) would accept these rows."
    )
    return message


def _make_parents(directory: Path) -> list[Path]:
    """Create ``directory`` and its missing parents; return those created, deepest first."""
    missing: list[Path] = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    created: list[Path] = []
    try:
        for path in reversed(missing):
            path.mkdir()
            created.insert(0, path)
    except OSError:
        for path in created:
            _remove_if_empty(path)
        raise
    return created


def _remove_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):
        directory.rmdir()
