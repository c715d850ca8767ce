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

from evalexport.exporters.base import Exporter
from evalexport.exporters.prepared import PreparedRun, prepare
from evalexport.exporters.samples import SAMPLES_TABLE_KEY, VERDICT_COLUMN, samples_beside
from evalexport.exporters.sdk import Sdk, Surface
from evalexport.exporters.spec import SdkConfig, Target
from evalexport.exporters.tables import ROLLOUTS_TABLE_KEY
from evalexport.guard import FINGERPRINT_SUMMARY_KEY
from evalexport.isolation.delivery import WorkerDelivery, WorkerSpec
from evalexport.reading.evaluation_times import exported_at
from evalexport.reading.health import VERDICT_KEY
from evalexport.results import DryRunPlan, ExportResult, ExportStatus, PlannedFile
from evalexport.run import RunArtifacts
from evalexport.settings import Chosen, SettingError, chosen
from evalexport.workers import WORKER_BODIES, wandb_worker
from evalexport.workers.protocol import WorkerResult
from evalexport.workers.wandb_worker import WandbPayload

__all__ = ["FINGERPRINT_KEY", "WandbConfig", "WandbExporter", "WandbTarget"]

FINGERPRINT_KEY = FINGERPRINT_SUMMARY_KEY

HISTORY_TABLE_ROWS = 10_000
"""The rows of a table a W&B run's history keeps (``wandb.Table.MAX_ROWS``): a bigger table is
logged whole to a table artifact of the run instead (the worker reads the SDK's own limits)."""
ARTIFACT_TABLE_ROWS = 200_000
"""The rows of one table in an artifact (``wandb.Table.MAX_ARTIFACT_ROWS``, W&B's documented
limit): a bigger one is logged as several."""

logger = logging.getLogger("evalexport.wandb")


class WandbConfig(SdkConfig):
    """Options of the ``wandb`` exporter (SPEC §3.7)."""

    wandb_project: str | None = Field(
        default=None,
        description="Project; default: $WANDB_PROJECT, else the benchmark (the stem without "
        "_rollouts).",
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
        description="Online: skip when the project already holds a finished run of this run's "
        "data (the same fingerprint, e.g. exported from a copy of the run directory); default: "
        "export a second copy and say so.",
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


class WandbExporter(Exporter[WandbConfig, PreparedRun, WandbTarget]):
    """Log the run to Weights & Biases as one run: config, summary metrics, and NeMo Gym's
    ``Rollouts`` table."""

    name = "wandb"
    summary = "Log the run to Weights & Biases: config, summary metrics, a rollouts table."
    kind = "tracking"
    sdk = Sdk(
        body=WORKER_BODIES / "wandb_worker.py",
        token_variables=("WANDB_API_KEY",),
        contract=Surface.declared(wandb_worker.SURFACE),
    )

    def resolve(self, run: RunArtifacts, config: WandbConfig) -> WandbTarget:
        """The project, entity and mode (an option, else W&B's variable, else the benchmark,
        the key's own entity, online); the directory W&B writes into, which must be writable;
        the worker: wandb's requirement and its key. An online dry run asks the project for
        runs of this run's data (offline there is no one to ask)."""
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
        return WandbTarget(
            where=where,
            settings={
                "wandb_mode": chosen_mode.source,
                "wandb_project": chosen_project.source,
                "wandb_entity": chosen_entity.source,
            },
            refusal=_unwritable_reason(directory)
            or (None if offline else _missing_credentials(config)),
            worker=WorkerSpec(
                requirements=config.requirements(),
                environment={
                    **_describing_the_evaluation(config),
                    **_staging_beside_the_run(directory),
                },
                answers_dry_runs=not offline,
                secrets={"WANDB_API_KEY": key.get_secret_value()} if key else {},
            ),
            project=chosen_project.value,
            entity=chosen_entity.value,
            mode=chosen_mode.value,
            directory=directory,
        )

    def read(self, run: RunArtifacts, config: WandbConfig) -> PreparedRun:
        """Read the run once; an export that logs the rollouts writes their table while it
        reads them (each rollout is a row)."""
        return prepare(
            run, rollouts_table=config.upload_rollouts and not config.dry_run, health=True
        )

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
            verdict = f"{VERDICT_COLUMN}, " if prepared.health.verdicts_fit() else ""
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
                f"rollout_index, agent, reward, {verdict}...; {where})",
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
        samples = samples_beside(table) if table else None
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
        }

        def with_sync_command(result: ExportResult, reported: WorkerResult) -> ExportResult:
            offline_run = result.details.get("run_dir")
            if (
                result.status is not ExportStatus.SUCCEEDED
                or result.details.get("mode") != ("offline")
                or not isinstance(offline_run, str)
            ):
                return result
            environment = Path(str(result.details["environment"]))
            sync = _sync_command(config, environment, offline_run)
            return result.model_copy(
                update={
                    "message": f"{result.message}; upload it with: {sync}",
                    "details": {**result.details, "sync_command": sync},
                }
            )

        return WorkerDelivery(payload, read_back=with_sync_command)


def _unwritable_reason(directory: Path) -> str | None:
    """W&B writes every run (online ones too) under ``<dir>/wandb``; when it cannot, it falls
    back to ``/tmp/wandb`` without a word. The directory is checked here instead.

    The SDK creates what is missing (Slurm scripts set ``WANDB_DIR=/scratch/$USER/wandb``
    before it exists), so the nearest directory that exists must be writable.
    """
    runs = directory / "wandb"
    existing = next(path for path in (runs, *runs.parents) if os.path.lexists(path))
    if existing.is_dir() and os.access(existing, os.W_OK | os.X_OK):
        return None
    if existing.is_dir():
        problem = f"{existing} is not writable"
    elif existing.exists():
        problem = f"{existing} is not a directory"
    else:
        problem = f"{existing} is a broken symlink"
    return (
        f"Cannot write the W&B run under {runs}: {problem}. Set WANDB_DIR to a directory "
        "you can write to (it may not exist yet), or export from one."
    )


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
    values (:mod:`evalexport.reading.health`; a metric of the run of the same name wins), then
    evalexport's own fields (the fingerprint; the evaluation's times, since W&B sets a run's start itself; the
    export's time)."""
    evaluation = prepared.evaluation.described()
    health = prepared.health
    values: dict[str, bool | int | float | str] = dict(prepared.metrics.values)
    values.update({k: v for k, v in health.metrics.items() if k not in values})
    if health.verdict is not None:
        values.setdefault(VERDICT_KEY, health.verdict)
    return {
        **values,
        FINGERPRINT_KEY: fingerprint,
        "evaluation/started_at": evaluation["started_at"],
        "evaluation/ended_at": evaluation["ended_at"],
        "evaluation/times_from": evaluation["source"],
        "evalexport/exported_at": exported_at(),
    }


def _staging_beside_the_run(directory: Path) -> dict[str, str]:
    """Where W&B stages what it uploads (table artifacts among it): under the W&B directory the
    run is written to, unless ``$WANDB_DATA_DIR`` says otherwise, never the user's
    ``~/.local/share/wandb`` (an offline run's tables wait there for ``wandb sync``)."""
    if os.environ.get("WANDB_DATA_DIR"):
        return {}
    return {"WANDB_DATA_DIR": str(directory / "wandb" / "data")}


def _describing_the_evaluation(config: WandbConfig) -> dict[str, str]:
    """What W&B records of the process that logs: evalexport's command as its program, and
    neither the worker's paths, its Python nor its environment's requirements (the
    evaluation's own config is the run's config). Each setting under the names of the wandb
    releases of the matrix: ``WANDB__*`` before 0.19, ``WANDB_X_*`` after."""
    program = f"evalexport wandb +rollouts_jsonl_fpath={config.rollouts_jsonl_fpath}"
    environment = {"WANDB_PROGRAM": program}
    for name in ("DISABLE_META", "SAVE_REQUIREMENTS", "DISABLE_MACHINE_INFO"):
        value = "false" if name == "SAVE_REQUIREMENTS" else "true"
        environment[f"WANDB__{name}"] = value
        environment[f"WANDB_X_{name}"] = value
    return environment


def mode(config: WandbConfig) -> Chosen[Literal["online", "offline"]]:
    """``online`` or ``offline`` and where it came from: ``+wandb_mode``, else ``$WANDB_MODE``
    (``dryrun`` is W&B's old name for offline, ``run`` for online), else online."""
    return chosen("wandb_mode", config.wandb_mode, "WANDB_MODE", "online", _mode_from_environment)


def _mode_from_environment(text: str) -> Literal["online", "offline"]:
    value = text.lower()
    if value in ("online", "run"):
        return "online"
    if value in ("offline", "dryrun"):
        return "offline"
    raise SettingError(
        f"WANDB_MODE={text!r}: evalexport exports online or offline (then wandb sync); "
        f"{'W&B logs nothing when disabled; ' if value == 'disabled' else ''}set WANDB_MODE to "
        "online or offline, give +wandb_mode=online|offline, or unset it"
    )


def project_name(config: WandbConfig, run: RunArtifacts) -> Chosen[str]:
    """The project and where it came from: ``+wandb_project``, else ``$WANDB_PROJECT``, else
    the benchmark."""
    return chosen("wandb_project", config.wandb_project, "WANDB_PROJECT", run.benchmark)


def entity(config: WandbConfig) -> Chosen[str | None]:
    """The entity and where it came from: ``+wandb_entity``, else ``$WANDB_ENTITY``, else the
    key's own (W&B's default)."""
    return chosen("wandb_entity", config.wandb_entity, "WANDB_ENTITY", None)


def _missing_credentials(config: WandbConfig) -> str | None:
    """Why an online export would be refused for want of an API key, or ``None``: looked for
    where the SDK looks (``WANDB_API_KEY``, an identity token file, the ``api_key`` of its
    settings files, the ``.netrc`` entry of its server), without reading the key itself."""
    if config.wandb_api_key is not None:
        return None
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return None
    from urllib.parse import urlparse

    base_url = os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai"
    host = urlparse(base_url).hostname or base_url
    home = Path.home()
    config_dir = Path(os.environ.get("WANDB_CONFIG_DIR") or home / ".config" / "wandb")
    for settings in (config_dir / "settings", Path.cwd() / "wandb" / "settings"):
        if _mentions(settings, "api_key"):
            return None
    netrcs = [Path(os.environ["NETRC"])] if os.environ.get("NETRC") else []
    netrcs += [home / ".netrc", home / "_netrc"]
    if any(_netrc_has(path, host) for path in netrcs):
        return None
    return (
        f"No W&B API key for an online export to {host}: WANDB_API_KEY is not set, "
        f"+wandb_api_key was not given, and no `wandb login` was found (no api_key in "
        f"{config_dir / 'settings'}, no {host} entry in {netrcs[0]}). Set WANDB_API_KEY, run "
        "`wandb login`, or export offline with +wandb_mode=offline (then `wandb sync`)."
    )


def _mentions(path: Path, key: str) -> bool:
    try:
        return any(line.split("=")[0].strip() == key for line in path.read_text().splitlines())
    except (OSError, UnicodeDecodeError):
        return False


def _netrc_has(path: Path, host: str) -> bool:
    import netrc

    try:
        return netrc.netrc(str(path)).authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False
