"""Each exporter's dry run speaks its backend's words: MLflow's metrics, params and tags; W&B's
config keys, summary and tables; EvalRDL's files and upload; a plugin what its
``dry_run_plan`` says, and nothing the plugin did not say."""

from __future__ import annotations

from typing import Any

import pytest

from evalexport.api import dry_run
from evalexport.cli._args import Arguments
from evalexport.cli.export import report
from evalexport.results import DryRunPlan, ExportStatus, PlannedFile
from evalexport.run import RunArtifacts
from evalexport.spec.base import Exporter, ExporterConfig


def _headings(stdout: str) -> list[str]:
    """The plan's headings: ``params (3):`` → ``params``."""
    return [
        line.split(" (")[0].rstrip(":")
        for line in stdout.splitlines()
        if (line and not line.startswith(" ") and line.endswith(":")) or "): none" in line
    ]


def test_a_wandb_dry_run_names_config_keys_summary_and_tables_not_params(
    cli, sample_run, monkeypatch
) -> None:
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    run = cli(
        "wandb", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "+wandb_mode=offline", "--dry-run"
    )
    assert run.exit_code == 0, run.output
    assert _headings(run.stdout) == ["files", "config keys", "summary", "tables"]
    assert "\nbatches:" not in run.stdout
    assert f"  Rollouts ({sample_run.rollout_count} rows" in run.stdout
    assert f"  Samples ({sample_run.rollout_count} rows" in run.stdout
    assert "  evaluation/started_at" in run.stdout
    for key in sample_run.run.read_saved_config():
        assert f"\n  {key}\n" in run.stdout


def test_an_evalrdl_dry_run_lists_the_directory_and_the_upload_and_no_metrics(
    evalrdl_token, cli, sample_run
) -> None:
    run = cli(
        "evalrdl",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        "+label=nightly",
        "+tags=[a,b]",
        "+meta.source=manual",
        "--dry-run",
    )
    assert run.exit_code == 0, run.output
    assert _headings(run.stdout) == ["files", "upload"]
    files = sorted(p for p in sample_run.run.run_dir.iterdir() if p.is_file())
    assert f"dry run: {len(files)} files (" in run.stdout
    assert "  label: nightly\n  tags: a, b\n  meta keys: source\n" in run.stdout


def test_an_mlflow_dry_run_keeps_its_metrics_params_tags_and_batches(cli, sample_run) -> None:
    run = cli("mlflow", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--dry-run")
    assert run.exit_code == 0, run.output
    assert _headings(run.stdout) == ["files", "metrics", "params", "tags", "artifacts"]
    assert "\nbatches: 1\n" in run.stdout
    assert "  samples.json\n" in run.stdout


class _SaysLittleConfig(ExporterConfig):
    pass


class _SaysLittle(Exporter[_SaysLittleConfig]):
    """A plugin whose plan names one file and a summary line, nothing else."""

    name = "says-little"
    summary = "A plugin with a plan of its own."

    def plan(self, run: RunArtifacts) -> DryRunPlan:
        return DryRunPlan(
            exporter=self.name,
            target="a notebook",
            files=[PlannedFile(path=str(run.rollouts), size_bytes=1)],
            summary="one page would be written",
        )

    def deliver(self) -> Any:
        raise AssertionError("a dry run delivers nothing")


def test_a_plugins_dry_run_shows_what_its_plan_says_and_invents_nothing(
    sample_run, capsys: pytest.CaptureFixture[str]
) -> None:
    result = dry_run(_SaysLittle, sample_run.rollouts)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert report(Arguments(), result) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        result.summary_line(),
        "target: a notebook",
        "files:",
        f"        1 B  {sample_run.rollouts}",
    ]
    assert "one page would be written" in out


def test_a_plugins_section_is_shown_scrubbed(sample_run) -> None:
    plan = DryRunPlan(
        exporter="x", target="t", sections={"headers": ["Authorization: Bearer abcdef1234567890"]}
    )
    assert plan.sections == {"headers": ["Authorization: Bearer ****"]}
