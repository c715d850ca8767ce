"""evalexport's environment settings (``settings.py``) and empty paths: a value that cannot mean
what its name says is a usage error naming it (exit code 2), never ignored."""

from __future__ import annotations

import json

import pytest

from evalexport.isolation import list_environments
from evalexport.settings import INSTALLER_VARIABLE, TIME_LIMIT_VARIABLE


@pytest.mark.parametrize("value", ["abc", "-1", "nan"])
@pytest.mark.parametrize("exporter", ["atif", "mlflow"])
@pytest.mark.parametrize("json_output", [True, False])
def test_a_progress_interval_that_is_no_interval_is_a_usage_error_not_a_traceback(
    cli_process, sample_run, tmp_path, monkeypatch, value: str, exporter: str, json_output: bool
) -> None:
    """#67's new user: ``EVALEXPORT_PROGRESS_INTERVAL=abc evalexport atif ...`` printed a
    traceback and exited 1; it is a usage error (exit 2) in one line, JSON with ``--json``."""
    monkeypatch.setenv("EVALEXPORT_PROGRESS_INTERVAL", value)
    options = {"atif": [f"+output_dirpath={tmp_path / 'out'}", "+agent_version=1"], "mlflow": []}
    run = cli_process(
        exporter,
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        *options[exporter],
        *(["--json"] if json_output else []),
    )
    assert run.exit_code == 2
    assert "Traceback" not in run.stderr
    assert f"EVALEXPORT_PROGRESS_INTERVAL={value!r} is not an interval" in run.stderr
    if json_output:
        assert json.loads(run.stdout)["exit_code"] == 2
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "ten", "1e400"])
@pytest.mark.parametrize("exporter", ["mlflow", "wandb", "evalrdl"])
@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_a_worker_time_limit_that_is_no_limit_is_a_usage_error(
    cli, sample_run, monkeypatch, value: str, exporter: str, dry_run: list[str]
) -> None:
    monkeypatch.setenv(TIME_LIMIT_VARIABLE, value)
    run = cli(exporter, f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--json", *dry_run)
    assert run.exit_code == 2
    message = json.loads(run.stdout)["message"]
    assert message.startswith(f"{TIME_LIMIT_VARIABLE}={value!r} is not a time limit")
    assert list_environments() == []


def test_a_worker_time_limit_in_seconds_is_taken(monkeypatch) -> None:
    from evalexport.settings import worker_time_limit

    monkeypatch.setenv(TIME_LIMIT_VARIABLE, " 2.5 ")
    assert worker_time_limit() == 2.5
    monkeypatch.setenv(TIME_LIMIT_VARIABLE, "")
    assert worker_time_limit() is None


@pytest.mark.parametrize("value", ["bogus", "UV", "conda"])
def test_an_installer_that_is_neither_uv_nor_pip_is_a_usage_error(
    cli, sample_run, monkeypatch, value: str
) -> None:
    monkeypatch.setenv(INSTALLER_VARIABLE, value)
    run = cli("wandb", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--json")
    assert run.exit_code == 2
    message = json.loads(run.stdout)["message"]
    assert message.startswith(f"{INSTALLER_VARIABLE}={value!r} names no installer")
    assert list_environments() == []


@pytest.mark.parametrize("exporter", ["atif", "mlflow", "wandb", "evalrdl"])
def test_an_empty_rollouts_path_is_a_usage_error(cli, exporter: str) -> None:
    run = cli(exporter, "+rollouts_jsonl_fpath=")
    assert run.exit_code == 2
    assert "invalid value for +rollouts_jsonl_fpath" in run.stderr
    assert "got an empty value" in run.stderr


@pytest.mark.parametrize("path", ["", " ", "+rollouts_jsonl_fpath="])
def test_inspect_with_an_empty_path_is_a_usage_error(cli, path: str) -> None:
    run = cli("inspect", path)
    assert run.exit_code == 2
    assert "the path given is empty" in run.stderr
    assert "run directory" not in run.stdout  # nothing was inspected
