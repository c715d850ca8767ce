"""The ``wandb`` exporter: a finished run as one Weights & Biases run (SPEC §3.7).

Config is the saved (masked) config; the summary is the shared metric flattening with values as
the file holds them (W&B takes the names as they are, as NeMo Gym's live W&B exporter logs
them); the rollouts go in Gym's ``Rollouts`` table unless ``upload_rollouts=false``. Offline runs
are written under ``$WANDB_DIR`` (else the current directory) for ``wandb sync``.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from pydantic import Field, SecretStr

from evalexport import ExportResult, ExportStatus, RunArtifacts
from evalexport.backends.wandb import worker as wandb_worker
from evalexport.backends.wandb.target import (
    describing_the_evaluation,
    missing_credentials,
    mode_from_environment,
    project_refusal,
    staging_beside_the_run,
    unwritable_reason,
)
from evalexport.backends.wandb.worker import WandbOutput, WandbPayload, run_id_of
from evalexport.spec import (
    FINGERPRINT_SUMMARY_KEY,
    Chosen,
    DryRunPlan,
    Exporter,
    PlannedFile,
    PreparedRun,
    RowsConfig,
    Sdk,
    Surface,
    Target,
    WorkerDelivery,
    WorkerSpec,
    chosen,
    exported_at,
    prepare,
)
from evalexport.workers.protocol import WorkerResult

__all__ = ["FINGERPRINT_KEY", "WandbConfig", "WandbExporter", "WandbTarget"]

FINGERPRINT_KEY = FINGERPRINT_SUMMARY_KEY
ROLLOUTS_TABLE_KEY: Final = "Rollouts"
"""The key of Gym's rollouts table (Gym's ``WandbExporter.ROLLOUTS_TABLE_KEY``)."""
SAMPLES_TABLE_KEY: Final = "Samples"
"""The typed samples table's key, beside Gym's ``Rollouts``."""

HISTORY_TABLE_ROWS = 10_000
"""The rows of a table a W&B run's history keeps (``wandb.Table.MAX_ROWS``): a bigger table is
logged whole to a table artifact of the run instead (the worker reads the SDK's own limits)."""
ARTIFACT_TABLE_ROWS = 200_000
"""The rows of one table in an artifact (``wandb.Table.MAX_ARTIFACT_ROWS``, W&B's documented
limit): a bigger one is logged as several."""

logger = logging.getLogger("evalexport.wandb")


class WandbConfig(RowsConfig):
    """Options of the ``wandb`` exporter (SPEC §3.7)."""

    wandb_project: str | None = Field(
        default=None,
        description=f"Project; default: $WANDB_PROJECT, else {RunArtifacts.NAMING_RULE}.",
    )
    wandb_name: str | None = Field(
        default=None, description="Run name; default: <benchmark>-<run directory name>."
    )
    wandb_entity: str | None = Field(
        default=None, description="Entity (user or team); default: $WANDB_ENTITY, else yours."
    )
    wandb_mode: Literal["online", "offline"] | None = Field(
        default=None,
        description="online logs to the W&B server; offline writes a local run for wandb sync; "
        "default: $WANDB_MODE, else online.",
    )
    wandb_api_key: SecretStr | None = Field(
        default=None, description="API key for online mode; default: $WANDB_API_KEY."
    )
    upload_rollouts: bool = Field(default=True, description="Log the rollouts as a table.")
    skip_existing: bool = Field(
        default=False,
        description="Online: skip, rather than wait, when another export is writing this run's "
        "data's run; default: wait for it. A finished run of this data (the same fingerprint, "
        "e.g. exported from a copy of the run directory) is always skipped for.",
    )
    second_copy: bool = Field(
        default=False,
        description="Online: export a second copy (run <id>-2) even where the project holds a "
        "finished run of this run's data; default: skip for it and write the marker.",
    )
    requirement: str | list[str] = Field(
        default="wandb>=0.16,<1",
        description="The wandb requirement; a new pin builds a new environment.",
    )


@dataclass(frozen=True, kw_only=True)
class WandbTarget(Target):
    """Where a W&B export goes, every setting resolved once."""

    project: str
    entity: str | None
    mode: Literal["online", "offline"]
    directory: Path
    """Where W&B writes the run (``$WANDB_DIR``, else the current directory): ``<it>/wandb``."""
    wait_seconds: float
    """How long the worker waits for another export writing this data's run, within its time
    limit."""


class WandbExporter(Exporter[WandbConfig, PreparedRun, WandbTarget]):
    """Log the run to Weights & Biases as one run: config, summary metrics, and NeMo Gym's
    ``Rollouts`` table."""

    name = "wandb"
    summary = "Log the run to Weights & Biases: config, summary metrics, a rollouts table."
    kind = "tracking"
    sdk = Sdk(
        body=Path(wandb_worker.__file__),
        token_variables=("WANDB_API_KEY",),
        contract=Surface.declared(wandb_worker.SURFACE),
    )

    def resolve(
        self, run: RunArtifacts, config: WandbConfig, time_limit: float | None
    ) -> WandbTarget:
        """The project, entity and mode (an option, else W&B's variable, else the benchmark,
        the key's own entity, online); the directory W&B writes into, which must be writable;
        how long the worker may wait for another export of this data (within ``time_limit``,
        the user's, else the worker's own); the worker: wandb's requirement and its key. An
        online dry run asks the project for runs of this run's data (offline there is no one
        to ask)."""
        chosen_mode = mode(config)
        chosen_project = project_name(config, run)
        chosen_entity = entity(config)
        directory = Path(os.environ.get("WANDB_DIR") or Path.cwd()).absolute()
        project = "/".join(filter(None, [chosen_entity.value, chosen_project.value]))
        offline = chosen_mode.value == "offline"
        where = (
            f"W&B offline run of {project} under {directory / 'wandb'}"
            if offline
            else f"W&B project {project}"
        )
        key = config.wandb_api_key
        limit = WorkerSpec.time_limit if time_limit is None else time_limit
        return WandbTarget(
            where=where,
            settings={
                "wandb_mode": chosen_mode.source,
                "wandb_project": chosen_project.source,
                "wandb_entity": chosen_entity.source,
            },
            refusal=project_refusal(chosen_project.value, chosen_project.source)
            or unwritable_reason(directory)
            or config.scratch_refusal(run, tables=config.upload_rollouts)
            or (None if offline else missing_credentials(config.wandb_api_key is not None)),
            worker=WorkerSpec(
                requirements=config.requirements(),
                environment={
                    **describing_the_evaluation(config.rollouts_jsonl_fpath),
                    **staging_beside_the_run(directory),
                    # As resolved: W&B's own settings refuse `OFFLINE`, which names offline.
                    "WANDB_MODE": chosen_mode.value,
                },
                answers_dry_runs=not offline,
                secrets={"WANDB_API_KEY": key.get_secret_value()} if key else {},
            ),
            project=chosen_project.value,
            entity=chosen_entity.value,
            mode=chosen_mode.value,
            directory=directory,
            # The worker gives up waiting in time to say for whom, before it is stopped.
            wait_seconds=max(limit - 60, limit / 2),
        )

    def read(self, run: RunArtifacts, config: WandbConfig) -> PreparedRun:
        """Read the run once; an export that logs the rollouts writes their table while it
        reads them (each rollout is a row)."""
        return prepare(run, rollouts_table=config.upload_rollouts, health=True)

    def plan(
        self, run: RunArtifacts, config: WandbConfig, target: WandbTarget, prepared: PreparedRun
    ) -> DryRunPlan:
        """In W&B's words: the run's config keys, its summary, the tables it logs."""
        files = [PlannedFile(path=str(p), size_bytes=p.stat().st_size) for p in (run.saved_config,)]
        files += [
            PlannedFile(path=str(path), size_bytes=size)
            for path, size in prepared.health.sizes.items()
        ]
        tables: list[str] = []
        if config.upload_rollouts:
            files.append(
                PlannedFile(path=str(run.rollouts), size_bytes=run.rollouts.stat().st_size)
            )
            rows = prepared.rollout_count
            verdict = (
                f"{prepared.health.VERDICT_COLUMN}, " if prepared.health.verdicts_fit() else ""
            )
            where = (
                "to the run's history"
                if rows <= HISTORY_TABLE_ROWS
                else f"whole to the run's table artifact (a W&B run's history keeps "
                f"{HISTORY_TABLE_ROWS} rows of a table), in tables of at most "
                f"{ARTIFACT_TABLE_ROWS} rows"
            )
            tables = [
                f"{ROLLOUTS_TABLE_KEY} ({rows} rows, one JSON text each, as NeMo Gym logs it; "
                f"{where})",
                f"{SAMPLES_TABLE_KEY} ({rows} rows, a column per value: task_index, "
                f"rollout_index, agent, reward, {verdict}turns, tool_calls, final_answer, ...; "
                f"{where})",
            ]
        flat = prepared.metrics
        named = (
            f" (the benchmark, {run.benchmark_source})"
            if target.settings.get("wandb_project") == "default"
            else ""
        )
        return DryRunPlan(
            exporter=self.name,
            target=target.where,
            summary=f"{run.rollouts.name} would be logged to {target.where}{named} as run "
            f"{config.wandb_name or run.default_run_name!r}",
            files=files,
            sections={
                "config keys": list(_config(run, prepared)),
                "summary": list(_summary(prepared, prepared.fingerprint)),
                "tables": tables,
            },
            metric_names=list(flat.metrics),
            tag_names=list(flat.texts),
        )

    def deliver(
        self,
        run: RunArtifacts,
        config: WandbConfig,
        target: WandbTarget,
        prepared: PreparedRun,
        fingerprint: str | None,
    ) -> WorkerDelivery[WandbPayload]:
        """What the worker logs, and, for an offline run, the command that uploads it."""
        fingerprint = fingerprint or prepared.fingerprint
        table = prepared.rollouts_table if config.upload_rollouts else None
        samples = prepared.samples_table if table else None
        payload: WandbPayload = {
            "project": target.project,
            "entity": target.entity,
            "name": config.wandb_name or run.default_run_name,
            "mode": target.mode,
            "dir": str(target.directory),
            "config": _config(run, prepared),  # the read warned of what masking changed
            "group": job.record.gym_job_id if (job := run.gym_job) is not None else None,
            "summary": _summary(prepared, fingerprint),
            "table_key": ROLLOUTS_TABLE_KEY,
            "tags": ["evalexport", f"evalexport-{fingerprint.removeprefix('sha256:')[:16]}"],
            "rollouts_table": str(table) if table else None,
            "samples_key": SAMPLES_TABLE_KEY,
            "samples_table": str(samples) if samples else None,
            "dry_run": config.dry_run,
            "skip_existing": config.skip_existing,
            "second_copy": config.second_copy,
            "run_id": run_id_of(fingerprint, target.entity, target.project),
            "wait_seconds": target.wait_seconds,
        }

        def with_sync_command(result: ExportResult, reported: WorkerResult) -> ExportResult:
            output: WandbOutput = reported.get("output") or {}  # type: ignore[assignment]
            offline_run = output.get("offline_run")
            if result.status is not ExportStatus.SUCCEEDED or offline_run is None:
                return result
            sync = _sync_command(config, Path(result.environment or ""), offline_run)
            return result.model_copy(
                update={
                    "message": f"{result.message.rstrip('.')}; upload it with: {sync}",
                    "details": {**result.details, "sync_command": sync},
                }
            )

        return WorkerDelivery(payload, read_back=with_sync_command, addresses=ADDRESSES)


def _sync_command(config: WandbConfig, environment: Path, offline_run: str) -> str:
    """The command that uploads an offline run, with the wandb this export used:
    ``evalexport envs run wandb wandb sync DIR`` (the environment's own name when the
    requirement is not the default)."""
    import shlex

    default = WandbConfig.model_fields["requirement"].get_default()
    name = "wandb" if config.requirement == default else environment.name
    return shlex.join(["evalexport", "envs", "run", name, "wandb", "sync", offline_run])


JOB_KEY: Final = "gym_job"
"""The config key holding a NeMo Gym job's identity (``gym_job_id``, ``gym_version``, ...)."""


def _config(run: RunArtifacts, prepared: PreparedRun) -> dict[str, object]:
    """The run's config: the saved config, masked, and for a benchmark of a NeMo Gym job the
    job's identity under ``gym_job`` (the run is grouped by the job's id too)."""
    config = dict(prepared.saved_config.config)
    if (job := run.gym_job) is not None and JOB_KEY not in config:
        config[JOB_KEY] = {**job.identity, "benchmark": run.benchmark}
    return config


def _summary(prepared: PreparedRun, fingerprint: str) -> dict[str, bool | int | float | str]:
    """The run's summary: the flattened metrics as NeMo Gym logs them, NeMo Gym's health
    values (:mod:`evalexport.gym.health`; a metric of the run of the same name wins), then
    evalexport's own fields (the fingerprint; the evaluation's times, since W&B sets a run's start itself; the
    export's time)."""
    evaluation = prepared.evaluation.described()
    health = prepared.health
    values: dict[str, bool | int | float | str] = dict(prepared.metrics.values)
    values.update({k: v for k, v in health.metrics.items() if k not in values})
    if health.verdict is not None:
        values.setdefault(health.VERDICT_KEY, health.verdict)
    return {
        **values,
        FINGERPRINT_KEY: fingerprint,
        "evaluation/started_at": evaluation["started_at"],
        "evaluation/ended_at": evaluation["ended_at"],
        "evaluation/times_from": evaluation["source"],
        "evalexport/exported_at": exported_at(),
    }


def mode(config: WandbConfig) -> Chosen[Literal["online", "offline"]]:
    """``online`` or ``offline`` and where it came from: ``+wandb_mode``, else ``$WANDB_MODE``
    (``dryrun`` is W&B's old name for offline, ``run`` for online), else online."""
    return chosen("wandb_mode", config.wandb_mode, "WANDB_MODE", "online", mode_from_environment)


def project_name(config: WandbConfig, run: RunArtifacts) -> Chosen[str]:
    """The project and where it came from: ``+wandb_project``, else ``$WANDB_PROJECT``, else
    the benchmark."""
    return chosen("wandb_project", config.wandb_project, "WANDB_PROJECT", run.benchmark)


def entity(config: WandbConfig) -> Chosen[str | None]:
    """The entity and where it came from: ``+wandb_entity``, else ``$WANDB_ENTITY``, else the
    key's own (W&B's default)."""
    return chosen("wandb_entity", config.wandb_entity, "WANDB_ENTITY", None)


ADDRESSES: Final = frozenset({"dir", "rollouts_table", "samples_table"})
"""The payload's keys the worker needs as they are (where W&B writes, the table files it logs,
masked as they were written); every other value passes the egress gate."""
