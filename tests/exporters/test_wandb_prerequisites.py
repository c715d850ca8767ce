"""What the wandb exporter checks before it builds anything (SPEC §3.7): where the run will be
written, and warnings the dry run and the export give alike. No environment is built here."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from evalexport.backends.wandb.exporter import WandbExporter
from evalexport.isolation import list_environments
from evalexport.pipeline import export_run
from evalexport.results import ExportStatus
from evalexport.spec.options import parse_options


def _dry_run(sample, **options):
    exporter = WandbExporter()
    config = parse_options(
        exporter, {"rollouts_jsonl_fpath": str(sample.rollouts), "dry_run": True, **options}
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


def test_the_dry_run_says_a_hand_written_config_holds_live_secrets(make_sample_run, caplog) -> None:
    sample = make_sample_run(mask_saved_config=False)
    with caplog.at_level(logging.DEBUG, logger="evalexport"):
        result = _dry_run(sample, wandb_mode="offline")
    assert result.status is ExportStatus.SUCCEEDED, result.message
    said = (
        f"Note: the saved config {sample.run.saved_config} holds values that look like live secrets"
    )
    assert said in result.message
    assert any("look like live secrets" in notice for notice in result.notices)
    assert sample.canaries.found_in(result.model_dump_json() + caplog.text) == []


@pytest.mark.parametrize("mode", ["offline", "online"])
def test_the_dry_run_of_a_masked_config_warns_of_nothing(sample_run, caplog, mode: str) -> None:
    assert "****" in Path(sample_run.run.saved_config).read_text()
    assert yaml.safe_load(sample_run.run.saved_config.read_text())  # the factory's own config
    with caplog.at_level(logging.WARNING, logger="evalexport"):
        _dry_run(sample_run, wandb_mode=mode)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def _export(sample, **options):
    exporter = WandbExporter()
    config = parse_options(exporter, {"rollouts_jsonl_fpath": str(sample.rollouts), **options})
    return export_run(exporter, sample.run, config)


def test_online_without_an_api_key_the_dry_run_fails_as_the_export_does(sample_run) -> None:
    dry = _dry_run(sample_run, wandb_mode="online")
    real = _export(sample_run, wandb_mode="online")
    assert (dry.status, dry.exit_code) == (real.status, real.exit_code) == (ExportStatus.FAILED, 1)
    assert dry.message == real.message
    assert "No W&B API key for an online export to api.wandb.ai" in dry.message
    assert "+wandb_mode=offline" in dry.message
    assert list_environments() == []  # refused before anything was built


@pytest.mark.parametrize("where", ["variable", "netrc", "settings", "option"])
def test_online_with_a_key_where_the_sdk_finds_it_the_dry_run_plans(
    sample_run, tmp_path, monkeypatch, where
) -> None:
    options = {"wandb_mode": "online"}
    if where == "variable":
        monkeypatch.setenv("WANDB_API_KEY", "0123456789abcdef0123456789abcdef01234567")
    elif where == "netrc":
        netrc = tmp_path / "netrc"
        netrc.write_text("machine api.wandb.ai\n  login user\n  password abcdef0123456789\n")
        netrc.chmod(0o600)
        monkeypatch.setenv("NETRC", str(netrc))
    elif where == "settings":
        config_dir = tmp_path / "wandb-config"
        config_dir.mkdir()
        (config_dir / "settings").write_text("[default]\napi_key = abcdef0123456789\n")
        monkeypatch.setenv("WANDB_CONFIG_DIR", str(config_dir))
    else:
        options["wandb_api_key"] = "0123456789abcdef0123456789abcdef01234567"
    dry = _dry_run(sample_run, **options)
    assert dry.status is ExportStatus.SUCCEEDED, dry.message
