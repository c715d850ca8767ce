"""MLflow worker body: logs one finished run with ``MlflowClient`` (SPEC §3.6).

Runs inside the mlflow environment, standard library plus the SDK only. Everything it logs was
prepared by the parent: sanitized names, batches within MLflow's limits, artifact files in a
scratch directory. The token, if any, reaches MLflow's REST client as MLFLOW_TRACKING_TOKEN.
"""

from __future__ import annotations

import time
from typing import Any, Final, TypedDict

from evalexport.workers.protocol import (
    FAILED,
    SUCCEEDED,
    WorkerResult,
    result,
)

SURFACE: Final = {
    "sdk": "mlflow",
    "paths": (
        "mlflow.tracking.MlflowClient",
        "mlflow.tracking.MlflowClient.get_experiment_by_name",
        "mlflow.tracking.MlflowClient.create_experiment",
        "mlflow.tracking.MlflowClient.create_run",
        "mlflow.tracking.MlflowClient.log_batch",
        "mlflow.tracking.MlflowClient.log_artifact",
        "mlflow.tracking.MlflowClient.set_terminated",
        "mlflow.tracking.MlflowClient.search_runs",
        "mlflow.entities.Experiment",
        "mlflow.entities.Run",
        "mlflow.entities.RunInfo",
        "mlflow.entities.Metric",
        "mlflow.entities.Param",
        "mlflow.entities.RunTag",
        "mlflow.exceptions.MlflowException",
    ),
    "switch": "runs another MLflow version of the matrix",
    "companions": ("sqlalchemy<2.1",),  # MLflow 2.x clients break on SQLAlchemy 2.1
}
"""What this body calls and reads back of its SDK (``Surface.declared``: its exporter's
``sdk_contract``): plain data, so the pytest plugin knows the SDK without importing the
exporter. Keep it in step with the code below; the contract checks hold the fakes and the
real releases to it."""

WARM_UP = ("mlflow.entities", "mlflow.tracking")
"""Imported by the runner before the payload arrives (while the parent reads the run)."""


class MlflowBatch(TypedDict):
    """One ``log_batch`` call, within MLflow's limits."""

    metrics: dict[str, float]
    params: dict[str, str]
    tags: dict[str, str]


class MlflowPayload(TypedDict):
    """What the MLflow worker receives: where to log, names, tags, the batches and the artifact
    files."""

    tracking_uri: str
    fingerprint_tag: str
    """The key of ``run_tags`` that holds the run's fingerprint."""
    artifact_location: str | None
    experiment_name: str
    run_name: str
    run_tags: dict[str, str]
    batches: list[MlflowBatch]
    artifacts: list[str]


_MAX_ERROR = 600


def _short(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= _MAX_ERROR else text[:_MAX_ERROR] + " ..."


def _experiment_id(client: Any, name: str, artifact_location: str | None) -> str:
    from mlflow.exceptions import MlflowException

    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        return str(experiment.experiment_id)
    try:
        return str(client.create_experiment(name, artifact_location=artifact_location))
    except MlflowException:  # created concurrently by another export
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            raise
        return str(experiment.experiment_id)


def _end_abandoned_runs(client: Any, experiment_id: str, tag: str, fingerprint: str) -> list[str]:
    """Runs of this same run's data still RUNNING: earlier exports that were killed before they
    could end their run (the guard's lock means none of them is still going on this machine)."""
    abandoned = client.search_runs(
        [experiment_id],
        filter_string=f"tags.`{tag}` = '{fingerprint}' and attributes.status = 'RUNNING'",
    )
    for each in abandoned:
        client.set_terminated(each.info.run_id, "FAILED")
    return [each.info.run_id for each in abandoned]


def _hint(error: BaseException, uri: str) -> str:
    text = str(error)
    if "_alembic_tmp_" in text:
        return (
            f" The store {uri} was left half-migrated by an interrupted MLflow schema upgrade; "
            "drop the leftover _alembic_tmp_* table (sqlite3: DROP TABLE <name>) or use a new store."
        )
    if "unable to open database file" in text:
        return f" Check that {uri.removeprefix('sqlite:///')} and its directory are writable."
    return ""


def _no_progress(done: int, total: int) -> None:
    pass


def run(payload: MlflowPayload, progress: Any = _no_progress) -> WorkerResult:
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    uri = payload["tracking_uri"]
    total = 3 + len(payload["batches"]) + len(payload["artifacts"])
    progress(0, total)
    run_id = None
    abandoned: list[str] = []
    try:
        client = MlflowClient(tracking_uri=uri)  # a local store is opened (and migrated) here
        experiment_id = _experiment_id(
            client, payload["experiment_name"], payload["artifact_location"]
        )
        tag = payload["fingerprint_tag"]
        abandoned = _end_abandoned_runs(client, experiment_id, tag, payload["run_tags"][tag])
        progress(1, total)
        created = client.create_run(
            experiment_id, run_name=payload["run_name"], tags=payload["run_tags"]
        )
        run_id = created.info.run_id
        progress(2, total)
        timestamp = int(time.time() * 1000)
        for done, batch in enumerate(payload["batches"], start=3):
            client.log_batch(
                run_id,
                metrics=[
                    Metric(key, value, timestamp, 0) for key, value in batch["metrics"].items()
                ],
                params=[Param(key, value) for key, value in batch["params"].items()],
                tags=[RunTag(key, value) for key, value in batch["tags"].items()],
            )
            progress(done, total)
        for done, path in enumerate(payload["artifacts"], start=3 + len(payload["batches"])):
            client.log_artifact(run_id, path)
            progress(done, total)
        client.set_terminated(run_id, "FINISHED")
        progress(total, total)
    except BaseException as error:  # SDK and connection errors, and a stop signal
        stopped = not isinstance(error, Exception)
        left = ""
        if run_id is not None:
            status = "KILLED" if stopped else "FAILED"
            try:
                client.set_terminated(run_id, status)
                left = f" (run {run_id} is marked {status})"
            except Exception:
                left = f" (run {run_id} was left unfinished: the server did not answer)"
        if stopped:
            error.add_note(f"MLflow export to {uri} stopped{left}.")
            raise
        return result(
            "failed",
            FAILED,
            f"MLflow export to {uri} failed{left}: {type(error).__name__}: {_short(error)}"
            + _hint(error, uri),
            partial_run_id=run_id,
        )
    notices = [
        f"an earlier export of this run that was stopped before it ended, MLflow run {each}, "
        "is now marked FAILED"
        for each in abandoned
    ]
    return result(
        "succeeded",
        SUCCEEDED,
        f"exported to MLflow run {run_id} in experiment {payload['experiment_name']!r} at {uri}",
        run_id=run_id,
        experiment_id=experiment_id,
        tracking_uri=uri,
        notices=notices,
    )
