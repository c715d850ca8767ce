"""MLflow worker body: logs one finished run with ``MlflowClient`` (SPEC §3.6).

Runs inside the mlflow environment, standard library plus the SDK only. Everything it logs was
prepared by the parent: sanitized names, batches within MLflow's limits, artifact files in a
scratch directory. The token, if any, reaches MLflow's REST client as MLFLOW_TRACKING_TOKEN.
"""

from __future__ import annotations

import time
from typing import Any

_MAX_ERROR = 600


def _result(status: str, exit_code: int, message: str, **details: Any) -> dict[str, Any]:
    return {"status": status, "exit_code": exit_code, "message": message, "details": details}


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


def run(payload: dict[str, Any]) -> dict[str, Any]:
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    uri = payload["tracking_uri"]
    client = MlflowClient(tracking_uri=uri)
    run_id = None
    try:
        experiment_id = _experiment_id(
            client, payload["experiment_name"], payload["artifact_location"]
        )
        created = client.create_run(
            experiment_id, run_name=payload["run_name"], tags=payload["run_tags"]
        )
        run_id = created.info.run_id
        timestamp = int(time.time() * 1000)
        for batch in payload["batches"]:
            client.log_batch(
                run_id,
                metrics=[
                    Metric(key, value, timestamp, 0) for key, value in batch["metrics"].items()
                ],
                params=[Param(key, value) for key, value in batch["params"].items()],
                tags=[RunTag(key, value) for key, value in batch["tags"].items()],
            )
        for path in payload["artifacts"]:
            client.log_artifact(run_id, path)
        client.set_terminated(run_id, "FINISHED")
    except Exception as error:  # MlflowException, connection errors, artifact store errors
        left = ""
        if run_id is not None:
            try:
                client.set_terminated(run_id, "FAILED")
                left = f" (run {run_id} is marked FAILED)"
            except Exception:
                left = f" (run {run_id} was left unfinished)"
        return _result(
            "failed",
            1,
            f"MLflow export to {uri} failed{left}: {type(error).__name__}: {_short(error)}",
            partial_run_id=run_id,
        )
    return _result(
        "succeeded",
        0,
        f"exported to MLflow run {run_id} in experiment {payload['experiment_name']!r} at {uri}",
        run_id=run_id,
        experiment_id=experiment_id,
        tracking_uri=uri,
    )
