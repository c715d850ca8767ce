"""Dry run and export agree on success or failure for every exporter (SPEC §3.3a)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalexport.pipeline import export_run
from evalexport.results import ExportStatus
from evalexport.spec.options import parse_options
from evalexport.spec.registry import load_exporter
from tests.test_dry_run_agreement import BROKEN_LINES, break_line

FAULTS = ["none", "none", *BROKEN_LINES, "no_metrics", "no_config", "empty", "unmasked", "gaps"]


@pytest.mark.downloads
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    fault=st.sampled_from(FAULTS),
    upload_rollouts=st.booleans(),
    exporter=st.sampled_from(["atif", "mlflow", "wandb", "evalrdl"]),
)
def test_dry_run_and_export_agree_on_success_or_failure(
    make_sample_run,
    use_sdk_env_cache,
    mlflow_env_python,
    wandb_env_python,
    evalrdl_sdk,
    tmp_path,
    fault,
    upload_rollouts,
    exporter,
) -> None:
    sample = make_sample_run(
        f"run-{uuid.uuid4().hex[:8]}",
        agents=("aime24_math_tool_agent",),
        rows_with_gaps=[2] if fault == "gaps" else [],
    )
    if fault in BROKEN_LINES:
        break_line(sample.rollouts, fault)
    elif fault == "no_metrics":
        sample.run.aggregate_metrics.unlink()
    elif fault == "no_config":
        sample.run.saved_config.unlink()
    elif fault == "empty":
        sample.rollouts.write_text("")
    elif fault == "unmasked":
        sample.run.saved_config.write_text("policy_api_key: sk-abcdefghijklmnopqrstuvwx\n")
    exporter_class = load_exporter(exporter)
    options: dict[str, object] = {"rollouts_jsonl_fpath": str(sample.rollouts)}
    if exporter in ("mlflow", "wandb"):
        options["upload_rollouts"] = upload_rollouts
    options.update(
        {
            "atif": {"output_dirpath": str(tmp_path / uuid.uuid4().hex), "agent_version": "1"},
            "mlflow": {"mlflow_tracking_uri": f"sqlite:///{tmp_path / 'store.db'}"},
            "wandb": {"wandb_mode": "offline"},
            "evalrdl": {"wait": False},
        }[exporter]
    )
    dry = export_run(
        exporter_class(), sample.run, parse_options(exporter_class, {**options, "dry_run": True})
    )
    real = export_run(exporter_class(), sample.run, parse_options(exporter_class, options))
    assert (dry.status is ExportStatus.FAILED) == (real.status is ExportStatus.FAILED), (
        exporter,
        fault,
        dry.message,
        real.message,
    )
