"""Each setting of an export is resolved once and handed down (SPEC §3.1): one MLflow export,
its dry run and its rerun each work out the tracking URI once and build one guard, whatever
stages they pass through. The worker is stood in for, so this needs no MLflow."""

from __future__ import annotations

from typing import Any

import pytest

import evalexport
from evalexport import guard
from evalexport.backends.mlflow import exporter as mlflow
from evalexport.isolation.delivery import OpenedWorker
from evalexport.results import ExportResult, ExportStatus


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts = {"tracking_uri": 0, "guards": 0}
    resolve_uri = mlflow.tracking_uri
    build_guard = guard.ExportGuard.__init__

    def tracking_uri(config: Any) -> Any:
        counts["tracking_uri"] += 1
        return resolve_uri(config)

    def guard_built(self: Any, *arguments: Any, **keywords: Any) -> None:
        counts["guards"] += 1
        build_guard(self, *arguments, **keywords)

    def delivered(self: Any, delivery: Any, run_dir: str, scratch: Any = ()) -> ExportResult:
        assert delivery.payload["tracking_uri"].startswith("sqlite:///")
        return ExportResult.succeeded("mlflow", run_dir, "logged", run_id="run-1")

    monkeypatch.setattr(mlflow, "tracking_uri", tracking_uri)
    monkeypatch.setattr(guard.ExportGuard, "__init__", guard_built)
    monkeypatch.setattr(OpenedWorker, "deliver", delivered)
    return counts


def test_an_mlflow_export_resolves_its_tracking_uri_once_and_builds_one_guard(
    counted: dict[str, int], sample_run
) -> None:
    result = evalexport.export("mlflow", sample_run.rollouts)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert result.details["settings"]["mlflow_tracking_uri"] == "default"
    assert counted == {"tracking_uri": 1, "guards": 1}


def test_its_dry_run_and_its_rerun_resolve_it_once_each(
    counted: dict[str, int], sample_run
) -> None:
    dry = evalexport.dry_run("mlflow", sample_run.rollouts)
    assert dry.status is ExportStatus.SUCCEEDED, dry.message
    assert dry.plan is not None
    assert dry.plan.settings["mlflow_tracking_uri"] == "default"
    assert counted == {"tracking_uri": 1, "guards": 1}
    assert evalexport.export("mlflow", sample_run.rollouts)
    rerun = evalexport.export("mlflow", sample_run.rollouts)
    assert rerun.status is ExportStatus.SKIPPED, rerun.message
    assert counted == {"tracking_uri": 3, "guards": 3}
