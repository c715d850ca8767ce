"""The ``mlflow`` exporter: a finished run as one MLflow run (SPEC §3.6).

Metric, param and tag names are those NeMo Gym's live MLflow exporter writes for the same
metrics and config (:mod:`.mlflow_names`), so a run exported afterwards lines up with one logged
live; params are the saved (masked) config; artifacts are ``global_config.json``,
``rollouts.json`` (Gym's table: one ``Rollout`` column) and the aggregate-metrics file. The default store is an embedded SQLite
database, ``sqlite:///mlruns.db`` in the current directory, which (unlike MLflow's file store)
holds metric names that prefix one another.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from pydantic import Field, SecretStr, field_validator

from evalexport import ExportResult, RunArtifacts, __version__
from evalexport.backends.mlflow import worker as mlflow_worker
from evalexport.backends.mlflow.names import (
    MAX_TAG_VALUE_LENGTH,
    Batch,
    cut_value,
    params_of,
    plan_batches,
    sanitize_names,
)
from evalexport.backends.mlflow.target import (
    DEFAULT_REQUEST_RETRIES,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_TRACKING_URI,
    lease_seconds,
    local_artifact_location,
    request_limits,
    resolve_tracking_uri,
    tracking_uri_problem,
    unwritable_store_reason,
    uri_from_environment,
)
from evalexport.backends.mlflow.traces import TracesFile, traces_in
from evalexport.backends.mlflow.worker import MlflowBatch, MlflowLiveRun, MlflowPayload
from evalexport.spec import (
    FINGERPRINT_TAG,
    Chosen,
    DryRunPlan,
    Egress,
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

__all__ = [
    "FINGERPRINT_TAG",
    "MLflowConfig",
    "MLflowExporter",
    "MLflowTarget",
    "resolve_tracking_uri",
]

logger = logging.getLogger("evalexport.mlflow")


class MLflowConfig(RowsConfig):
    """Options of the ``mlflow`` exporter (SPEC §3.6)."""

    @field_validator("mlflow_tracking_uri")
    @classmethod
    def _a_uri(cls, uri: str | None) -> str | None:
        if uri is not None and (problem := tracking_uri_problem(uri)):
            raise ValueError(problem)
        return uri

    mlflow_tracking_uri: str | None = Field(
        default=None,
        description="Tracking URI: a server (http://...), or a database; default: "
        f"$MLFLOW_TRACKING_URI, else an embedded SQLite store in the current directory "
        f"({DEFAULT_TRACKING_URI}).",
    )
    mlflow_experiment_name: str | None = Field(
        default=None,
        description=f"Experiment; default: $MLFLOW_EXPERIMENT_NAME, else {RunArtifacts.NAMING_RULE}.",
    )
    mlflow_run_name: str | None = Field(
        default=None, description="Run name; default: <benchmark>-<run directory name>."
    )
    mlflow_tracking_token: SecretStr | None = Field(
        default=None, description="Token for the tracking server; default: $MLFLOW_TRACKING_TOKEN."
    )
    upload_rollouts: bool = Field(default=True, description="Upload rollouts.json as an artifact.")
    traces: bool = Field(
        default=False,
        description="Log each rollout as an MLflow trace linked to the run (its model turns "
        "and tool calls as spans; tags task_index, rollout_index, agent, reward), to read in "
        "the UI's Traces view; needs MLflow 3. Off by default: it costs what MLflow's own "
        "span ingestion costs, about 6 ms a trace of 5 spans on an embedded store, 50 ms "
        "before MLflow 3.4 (docs/performance.md, 'MLflow traces').",
    )
    skip_existing: bool = Field(
        default=False,
        description="Skip, rather than wait, when another export is making a run of this run's "
        "data, and skip for a finished one someone reopened since; default: wait for the "
        "first, make a new run beside the second. A finished run of this data (the same "
        "fingerprint, e.g. exported from a copy of the run directory) is always skipped for.",
    )
    second_copy: bool = Field(
        default=False,
        description="Export a second copy even where the experiment holds a finished run of "
        "this run's data; default: skip for it and write the marker.",
    )
    mlflow_request_timeout: int | None = Field(
        default=None,
        ge=1,
        description="Seconds to wait for the tracking server's answer to one request; default: "
        f"$MLFLOW_HTTP_REQUEST_TIMEOUT, else {DEFAULT_REQUEST_TIMEOUT}.",
    )
    mlflow_request_retries: int | None = Field(
        default=None,
        ge=0,
        description="Retries of a failed request (0, 1, 2, 4, ... s apart); default: "
        f"$MLFLOW_HTTP_REQUEST_MAX_RETRIES, else {DEFAULT_REQUEST_RETRIES}.",
    )
    requirement: str | list[str] = Field(
        default="mlflow>=2.10,<4",
        description="The MLflow requirement; a new pin builds a new environment.",
    )


@dataclass(frozen=True, kw_only=True)
class MLflowTarget(Target):
    """Where an MLflow export goes, every setting resolved once."""

    tracking_uri: str
    """The tracking URI, an embedded store's path made absolute (the worker runs elsewhere)."""
    experiment: str
    run_name: str
    store: Path | None
    """The embedded SQLite store the export writes into, if its target is one."""
    lease_seconds: float
    """How long a run's lease holds unrenewed (``$EVALEXPORT_LEASE_SECONDS``)."""
    wait_seconds: float
    """How long the worker waits for another export of this data, within its time limit."""


@dataclass
class _Plan:
    """Everything the export would send, computed once for the dry run and the worker."""

    metrics: dict[str, float]
    params: dict[str, str]
    tags: dict[str, str]
    batches: list[Batch]
    saved_config: dict[str, object]
    """The saved config as it is sent: masked again (``global_config.json``)."""
    warnings: list[str] = field(default_factory=list)


class MLflowExporter(Exporter[MLflowConfig, PreparedRun, MLflowTarget]):
    """Log the run to MLflow as one run: metrics, the saved config as params, tags, and artifacts,
    named as NeMo Gym's live MLflow exporter names them."""

    name = "mlflow"
    summary = "Log the run to MLflow: metrics, the saved config as params, artifacts."
    kind = "tracking"
    sdk = Sdk(
        body=Path(mlflow_worker.__file__),
        token_variables=(
            "MLFLOW_TRACKING_TOKEN",
            "MLFLOW_TRACKING_USERNAME",
            "MLFLOW_TRACKING_PASSWORD",
        ),
        contract=Surface.declared(mlflow_worker.SURFACE),
        # The client uploads artifacts straight to the artifact store, with that store's own
        # credentials: S3 (and S3-compatible stores: MLFLOW_S3_ENDPOINT_URL), Azure Blob,
        # Google Cloud Storage, a Databricks workspace (docs/exporters/mlflow.md).
        variables=(
            "MLFLOW_",
            "AWS_",
            "AZURE_",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "GOOGLE_CLOUD_PROJECT",
            "DATABRICKS_",
        ),
    )

    def resolve(
        self, run: RunArtifacts, config: MLflowConfig, time_limit: float | None
    ) -> MLflowTarget:
        """The tracking URI (``+mlflow_tracking_uri``, else ``$MLFLOW_TRACKING_URI``, else the
        embedded store), the experiment and the run's name; how long a run's lease holds and
        how long the worker may wait for another export of this data (within ``time_limit``,
        the user's, else the worker's own); and the worker: MLflow's requirement, bounded
        waits on a server that is down or dies (SPEC §3.6), the embedded store, which workers
        write one at a time, and the token."""
        uri = tracking_uri(config)
        experiment = experiment_name(config, run)
        resolved = resolve_tracking_uri(uri.value)
        store = (
            Path(resolved.removeprefix("sqlite:///")) if resolved.startswith("sqlite:///") else None
        )
        token = config.mlflow_tracking_token
        limit = WorkerSpec.time_limit if time_limit is None else time_limit
        return MLflowTarget(
            where=resolved,  # plans and markers mask it
            settings={
                "mlflow_tracking_uri": uri.source,
                "mlflow_experiment_name": experiment.source,
            },
            refusal=experiment_refusal(experiment)
            or unwritable_store_reason(store)
            or config.scratch_refusal(run, tables=config.upload_rollouts),
            worker=WorkerSpec(
                requirements=config.requirements(),
                environment={
                    **request_limits(config.mlflow_request_timeout, config.mlflow_request_retries),
                    # Each trace written before the next, so a stop leaves whole traces only.
                    **({"MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false"} if config.traces else {}),
                    # A dry run writes nothing: MLflow 3's telemetry would record an
                    # installation id in ~/.config/mlflow on import. An export leaves it as the
                    # user has it.
                    **({"MLFLOW_DISABLE_TELEMETRY": "true"} if config.dry_run else {}),
                },
                local_store=store,
                # A dry run asks the target for runs of this run's data; a store not yet made
                # holds none, and opening it would make it. With +traces it also asks whether
                # this MLflow can log them: the worker answers that without opening the store.
                answers_dry_runs=store is None or store.exists() or config.traces,
                secrets={"MLFLOW_TRACKING_TOKEN": token.get_secret_value()} if token else {},
            ),
            tracking_uri=resolved,
            experiment=experiment.value,
            run_name=config.mlflow_run_name or run.default_run_name,
            store=store,
            lease_seconds=lease_seconds(),
            # The worker gives up waiting in time to say for whom, before it is stopped.
            wait_seconds=max(limit - 60, limit / 2),
        )

    def read(self, run: RunArtifacts, config: MLflowConfig) -> PreparedRun:
        """Read the run once; an export that uploads the rollouts writes ``rollouts.json``
        while it reads them (each rollout is a row)."""
        prepared = prepare(
            run,
            rollouts_table=config.upload_rollouts,
            health=True,
            row_files=[TracesFile] if config.traces else [],
        )
        # A list too long to be a param a leaf: the result says so, the dry run's as the
        # export's (the gate's notes end both).
        for bounded in params_of(prepared.saved_config.config).lists:
            Egress.current().note(bounded.notice())
        return prepared

    def plan(
        self, run: RunArtifacts, config: MLflowConfig, target: MLflowTarget, prepared: PreparedRun
    ) -> DryRunPlan:
        plan = _plan(prepared)
        for warning in plan.warnings:
            logger.warning("%s", warning)
        sources = [run.saved_config, run.aggregate_metrics]
        if config.upload_rollouts:
            sources.append(run.rollouts)
        sources += list(prepared.health.sizes)
        named = (
            f" (the benchmark, {run.benchmark_source})"
            if target.settings.get("mlflow_experiment_name") == "default"
            else ""
        )
        return DryRunPlan(
            exporter=self.name,
            target=target.where,
            summary=f"{run.rollouts.name} would be exported to {target.where} as run "
            f"{target.run_name!r} of experiment {target.experiment!r}{named}",
            files=[PlannedFile(path=str(p), size_bytes=p.stat().st_size) for p in sources],
            sections={
                "metrics": sorted(plan.metrics),
                "params": sorted(plan.params),
                "tags": sorted(plan.tags) + sorted(_run_tags(run, prepared, None)),
                "artifacts": _artifact_names(run, config, prepared),
                **(
                    {
                        "traces": [
                            f"{prepared.rollout_count} traces, one a rollout, linked to the run"
                        ]
                    }
                    if config.traces
                    else {}
                ),
            },
            metric_names=sorted(plan.metrics),
            param_names=sorted(plan.params),
            tag_names=sorted(plan.tags),
            batches=len(plan.batches),
        )

    def deliver(
        self,
        run: RunArtifacts,
        config: MLflowConfig,
        target: MLflowTarget,
        prepared: PreparedRun,
        fingerprint: str | None,
        scratch: Path,
    ) -> WorkerDelivery[MlflowPayload]:
        """What the worker sends: the batches, the tags, and the artifacts written into
        ``scratch`` beside Gym's rollouts table."""
        plan = _plan(prepared)
        for warning in plan.warnings:
            logger.warning("%s", warning)
        run_tags = _run_tags(run, prepared, fingerprint)
        live_run_id = run.live_run_id(self.name)
        if live_run_id:
            logger.warning(
                "%s was also logged live as MLflow run %s; exporting it as a second run (%s "
                "is deprecated and read until evalexport 0.6.0: NeMo Gym writes none, and its "
                "live run is found from the run's config)",
                run.rollouts.name,
                live_run_id,
                run.live_run_record(self.name).name,
            )
            run_tags[mlflow_worker.LIVE_RUN_TAG] = live_run_id
        metrics_file = scratch / run.aggregate_metrics.name
        metrics_file.write_bytes(prepared.aggregate_metrics)  # as read, through the gate
        artifacts = [_write_global_config(plan.saved_config, scratch), metrics_file]
        for name, data in prepared.health.files.items():  # Gym's health files, as they leave
            (scratch / name).write_bytes(data)
            artifacts.append(scratch / name)
        table = prepared.rollouts_table if config.upload_rollouts else None
        if table is not None:
            artifacts.append(table)
            tables = [{"path": "rollouts.json", "type": "table"}]
            if (samples := prepared.samples_table) is not None:  # the typed table beside it
                artifacts.append(samples)
                tables.append({"path": samples.name, "type": "table"})
            run_tags["mlflow.loggedArtifacts"] = json.dumps(tables)
        payload: MlflowPayload = {
            "tracking_uri": target.tracking_uri,
            "fingerprint_tag": FINGERPRINT_TAG,
            "dry_run": config.dry_run,
            "lease_seconds": target.lease_seconds,
            "wait_seconds": target.wait_seconds,
            "skip_existing": config.skip_existing,
            "second_copy": config.second_copy,
            "artifact_location": local_artifact_location(target.tracking_uri),
            "store_directory": str(target.store.parent) if target.store else None,
            "experiment_name": target.experiment,
            "run_name": target.run_name,
            "run_tags": run_tags,
            "batches": [
                MlflowBatch(metrics=batch.metrics, params=batch.params, tags=batch.tags)
                for batch in plan.batches
            ],
            "artifacts": [str(path) for path in artifacts],
            "start_time_ms": prepared.evaluation.started_at_ms,
            "end_time_ms": prepared.evaluation.ended_at_ms,
        }
        if config.traces:  # a dry run only asks whether this MLflow can log them
            traces = traces_in(prepared)
            payload["traces"] = str(traces) if traces is not None else ""
            payload["traces_count"] = prepared.rollout_count if traces is not None else 0
        live, elsewhere = gym_live_run(prepared.saved_config.config, target.tracking_uri)
        if live is not None:
            payload["live_run"] = live
        if not live_run_id and elsewhere is None:
            return WorkerDelivery(payload, addresses=ADDRESSES)

        def with_live_run(result: ExportResult, reported: WorkerResult) -> ExportResult:
            if live_run_id:
                details = {**result.details, "live_run_id": live_run_id}
                result = result.model_copy(update={"details": details})
            return result.noted([elsewhere] if elsewhere and result else [])

        return WorkerDelivery(payload, read_back=with_live_run, addresses=ADDRESSES)


ADDRESSES: Final = frozenset(
    {"tracking_uri", "artifact_location", "store_directory", "artifacts", "traces"}
)
"""The payload's keys the worker needs as they are (where the store is, the files it uploads,
already masked as they were written); every other value passes the egress gate."""


JOB_TAG_PREFIX: Final = "gym_job."
"""The tags naming a NeMo Gym job's identity: ``gym_job.gym_job_id``, ``gym_job.gym_version``,
``gym_job.gym_commit``, ``gym_job.cluster``, ``gym_job.submitted_at``, ..., and
``gym_job.benchmark``."""


def gym_live_run(
    config: Mapping[str, object], tracking_uri: str
) -> tuple[MlflowLiveRun | None, str | None]:
    """Where the evaluation logged live to MLflow, as its config says, when that is this
    export's target (``tracking_uri``); else what the result says of it. NeMo Gym's live
    exporter runs when the global config names ``mlflow_tracking_uri``,
    ``mlflow_experiment_name`` and ``mlflow_run_name`` (``MLFlowConfig.is_available``), and
    makes its run under that name in that experiment at that URI; Gym records nothing else of
    it. The run is looked up only where the config says it lives: a run of that name
    elsewhere is somebody else's."""
    uri, experiment, name = (config.get(key) for key in _GYM_LIVE_KEYS)
    if not (uri and isinstance(experiment, str) and experiment and isinstance(name, str) and name):
        return None, None
    if isinstance(uri, str) and same_tracking_uri(uri, tracking_uri):
        return MlflowLiveRun(experiment=experiment, run_name=name), None
    return None, (
        f"the evaluation also logged this run live to {uri} (run {name!r} of experiment "
        f"{experiment!r}, as its config says); that is not this export's target, so its run "
        "is not looked up here"
    )


def same_tracking_uri(first: str, second: str) -> bool:
    """Whether two tracking URIs name one place as written: scheme and host in any case, a
    trailing ``/`` or none. An interpolation (``${oc.env:MLFLOW_TRACKING_URI}``) names none."""
    from urllib.parse import urlsplit

    def spelled(uri: str) -> tuple[str, str, str] | None:
        if "${" in uri:
            return None
        parts = urlsplit(uri.strip())
        return parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/")

    found = spelled(first)
    return found is not None and found == spelled(second)


_GYM_LIVE_KEYS: Final = ("mlflow_tracking_uri", "mlflow_experiment_name", "mlflow_run_name")


def _run_tags(run: RunArtifacts, prepared: PreparedRun, fingerprint: str | None) -> dict[str, str]:
    """The tags evalexport gives the run: what it is (the fingerprint the guard finds it by,
    the rollouts file, the NeMo Gym job it is a benchmark of) and when it ran."""
    evaluation = prepared.evaluation.described()
    job_tags = {}
    if (job := run.gym_job) is not None:  # one job's benchmarks found together
        job_tags = {f"{JOB_TAG_PREFIX}{key}": value for key, value in job.identity.items()}
        job_tags[f"{JOB_TAG_PREFIX}benchmark"] = run.benchmark
    return {
        **job_tags,
        FINGERPRINT_TAG: fingerprint or prepared.fingerprint,
        "evalexport.version": __version__,
        "evalexport.rollouts": str(run.rollouts),
        "evalexport.exported_at": exported_at(),
        "evalexport.evaluation.started_at": evaluation["started_at"],
        "evalexport.evaluation.ended_at": evaluation["ended_at"],
        "evalexport.evaluation.times_from": evaluation["source"],
    }


def _plan(prepared: PreparedRun) -> _Plan:
    """What the export sends of ``prepared``: names as Gym's live exporter writes them,
    within MLflow's limits, in batches."""
    flat = prepared.metrics
    saved = prepared.saved_config
    raw_params = params_of(saved.config).values
    raw_metrics, raw_texts, collided = prepared.health.joined(flat.metrics, flat.texts)
    metric_names = sanitize_names(raw_metrics, "metric")
    param_names = sanitize_names(raw_params, "param")
    tag_names = sanitize_names(raw_texts, "tag")
    metrics = {metric_names.names[k]: v for k, v in raw_metrics.items() if k in metric_names.names}
    params = {param_names.names[k]: v for k, v in raw_params.items() if k in param_names.names}
    tags = {
        tag_names.names[k]: cut_value(v, MAX_TAG_VALUE_LENGTH)
        for k, v in raw_texts.items()
        if k in tag_names.names
    }
    # What masking and non-finite metrics changed, the pipeline says once, for every export.
    warnings = metric_names.warnings + param_names.warnings + tag_names.warnings + collided
    batches = plan_batches(metrics, params, tags)
    return _Plan(metrics, params, tags, batches, saved.config, warnings)


def tracking_uri(config: MLflowConfig) -> Chosen[str]:
    """The tracking URI and where it came from: ``+mlflow_tracking_uri``, else
    ``$MLFLOW_TRACKING_URI``, else the embedded store."""
    return chosen(
        "mlflow_tracking_uri",
        config.mlflow_tracking_uri,
        "MLFLOW_TRACKING_URI",
        DEFAULT_TRACKING_URI,
        uri_from_environment,
    )


EXPERIMENT_NAME_LIMIT: Final = 500
"""The longest experiment name MLflow takes (``MAX_EXPERIMENT_NAME_LENGTH``), in characters."""


def experiment_refusal(experiment: Chosen[str]) -> str | None:
    """Why MLflow would refuse the experiment's name, found before anything is built."""
    name = experiment.value
    if not name.strip():
        return f"The MLflow experiment name ({experiment.source}) is empty; name one"
    if len(name) > EXPERIMENT_NAME_LIMIT:
        return (
            f"The MLflow experiment name {name[:40]!r}... ({experiment.source}) is {len(name)} "
            f"characters; MLflow takes at most {EXPERIMENT_NAME_LIMIT}"
        )
    return None


def experiment_name(config: MLflowConfig, run: RunArtifacts) -> Chosen[str]:
    """The experiment and where it came from: ``+mlflow_experiment_name``, else
    ``$MLFLOW_EXPERIMENT_NAME``, else the benchmark."""
    return chosen(
        "mlflow_experiment_name",
        config.mlflow_experiment_name,
        "MLFLOW_EXPERIMENT_NAME",
        run.benchmark,
    )


def _artifact_names(run: RunArtifacts, config: MLflowConfig, prepared: PreparedRun) -> list[str]:
    """The run's artifacts as MLflow lists them: Gym's two, the aggregate metrics, the
    samples table beside Gym's rollouts table, and Gym's health files (secrets masked)."""
    names = ["global_config.json", run.aggregate_metrics.name, *prepared.health.files]
    if config.upload_rollouts:
        names += ["rollouts.json", prepared.SAMPLES_FILE]
    return sorted(names)


def _write_global_config(saved_config: dict[str, object], scratch: Path) -> Path:
    path = scratch / "global_config.json"
    path.write_text(json.dumps(saved_config, indent=2, ensure_ascii=False, default=str))
    return path
