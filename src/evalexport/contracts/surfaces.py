"""The SDK surface each worker uses: the names the contract checks hold the fakes and the real
SDKs to. Keep these in step with ``evalexport/workers/*_worker.py``.

A surface lists what the worker calls and what it reads back: the classes of the objects the
SDK returns (``evalrdl.Upload``: ``.state``, ``.run_id``) and the exceptions whose attributes
it reads (``IntakeRefused.stage``). The manifest records their attributes, so a renamed field
is drift like a renamed parameter."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import final

__all__ = ["SURFACES", "Surface"]


@final
@dataclass(frozen=True)
class Surface:
    sdk: str
    paths: tuple[str, ...]
    environment: dict[str, str] = field(default_factory=dict)
    """Set while extracting (never real secrets): what building an instance needs."""
    fake: str | None = None
    """``fakes/<name>/src`` holds a fake of this SDK, checked against the real manifests."""


SURFACES: dict[str, Surface] = {
    "evalrdl": Surface(
        "evalrdl",
        (
            "evalrdl.Client",
            "evalrdl.Client().uploads.upload",
            "evalrdl.Upload",
            "evalrdl.sdk.api.upload_plan",
            "evalrdl.EvalRDLError",
            "evalrdl.IntakeRefused",
            "evalrdl.ClientTooOld",
            "evalrdl.TokenNotFound",
        ),
        environment={"EVALRDL_TOKEN": "manifest-extraction-not-a-token"},
        fake="evalrdl",
    ),
    "mlflow": Surface(
        "mlflow",
        (
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
    ),
    "wandb": Surface(
        "wandb",
        (
            "wandb.init",
            "wandb.Settings",
            "wandb.Table",
            "wandb.sdk.wandb_run.Run",
            "wandb.sdk.wandb_run.Run.log",
            "wandb.sdk.wandb_run.Run.finish",
            "wandb.sdk.wandb_summary.Summary.update",
        ),
    ),
}
