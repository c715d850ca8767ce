"""What the wandb exporter checks before it builds anything (SPEC §3.7): where the run will be
written, and warnings the dry run and the export give alike. No environment is built here."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from evalexport.exporters.wandb import WandbExporter
from evalexport.isolation import list_environments
from evalexport.pipeline import export_run
from evalexport.results import ExportStatus


def _dry_run(sample, **options):
    exporter = WandbExporter()
    config = exporter.parse_config(
        {"rollouts_jsonl_fpath": str(sample.rollouts), "dry_run": True, **options}
    )
    return export_run(exporter, sample.run, config)


def test_a_wandb_dir_that_does_not_exist_yet_is_taken(sample_run, tmp_path, monkeypatch) -> None:
    """Slurm scripts set WANDB_DIR=/scratch/$USER/wandb before it exists; the SDK creates it."""
    wandb_dir = tmp_path / "scratch" / "user" / "wandb"
    monkeypatch.setenv("WANDB_DIR", str(wandb_dir))
    result = _dry_run(sample_run, wandb_mode="offline")
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert result.plan is not None
    assert str(wandb_dir / "wandb") in result.plan.target
    assert not wandb_dir.exists()  # a dry run creates nothing


def test_a_wandb_dir_under_a_file_is_refused_naming_the_file(
    sample_run, tmp_path, monkeypatch
) -> None:
    blocker = tmp_path / "scratch"
    blocker.write_text("not a directory")
    monkeypatch.setenv("WANDB_DIR", str(blocker / "wandb"))
    result = _dry_run(sample_run)
    assert result.exit_code == 1
    assert result.message == (
        f"Cannot write the W&B run under {blocker / 'wandb' / 'wandb'}: {blocker} is not a "
        "directory. Set WANDB_DIR to a directory you can write to (it may not exist yet), or "
        "export from one."
    )
    assert list_environments() == []


def test_the_dry_run_warns_of_live_secrets_in_a_hand_written_config(
    make_sample_run, caplog
) -> None:
    sample = make_sample_run(mask_saved_config=False)
    with caplog.at_level(logging.WARNING, logger="evalexport"):
        result = _dry_run(sample, wandb_mode="offline")
    assert result.status is ExportStatus.SUCCEEDED, result.message
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        f"the saved config {sample.run.saved_config} holds values that look like live secrets"
        in warning
        for warning in warnings
    ), warnings
    assert all(canary not in caplog.text for canary in sample.canaries.all)


@pytest.mark.parametrize("mode", ["offline", "online"])
def test_the_dry_run_of_a_masked_config_warns_of_nothing(sample_run, caplog, mode: str) -> None:
    assert "****" in Path(sample_run.run.saved_config).read_text()
    assert yaml.safe_load(sample_run.run.saved_config.read_text())  # the factory's own config
    with caplog.at_level(logging.WARNING, logger="evalexport"):
        _dry_run(sample_run, wandb_mode=mode)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
