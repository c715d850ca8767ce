"""Dry run and export run the same checks (SPEC §3.3a) and no secret of a run leaves unmasked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BROKEN_LINES = {
    "truncated": '{"_ng_task_index": 0, "reward": 1.0,',
    "not_utf8": b'{"x": "\xff\xfe"}'.decode("latin-1"),
    "bom": '\ufeff{"_ng_task_index": 0}',
    "not_an_object": "[1, 2, 3]",
}


def break_line(rollouts: Path, kind: str) -> None:
    lines = rollouts.read_bytes().splitlines(keepends=True)
    if kind == "not_utf8":
        lines[1] = b'{"x": "\xff\xfe"}\n'
    else:
        lines[1] = (BROKEN_LINES[kind] + "\n").encode("utf-8")
    rollouts.write_bytes(b"".join(lines))


def _parsing_rollouts() -> list[str]:
    """The built-ins that parse every rollouts line (the tracking ones), from the registry."""
    from evalexport.spec.registry import BUILTIN_EXPORTERS, load_exporter

    return [name for name in sorted(BUILTIN_EXPORTERS) if load_exporter(name).kind == "tracking"]


@pytest.mark.parametrize("kind", sorted(BROKEN_LINES))
@pytest.mark.parametrize("exporter", _parsing_rollouts())
def test_a_broken_rollouts_line_fails_the_dry_run_as_it_fails_the_export(
    cli, make_sample_run, exporter, kind
) -> None:
    sample = make_sample_run()
    break_line(sample.rollouts, kind)
    run = cli(exporter, f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run")
    assert run.exit_code == 1, run.output
    assert f"{sample.rollouts}: line 2" in run.stdout


def test_the_wandb_dry_run_reads_the_config_and_names_the_real_project(
    cli, make_sample_run, monkeypatch
) -> None:
    monkeypatch.setenv("WANDB_API_KEY", "0123456789abcdef0123456789abcdef01234567")
    sample = make_sample_run()
    online = ("+wandb_mode=online", "--dry-run")
    run = cli("wandb", f"+rollouts_jsonl_fpath={sample.rollouts}", *online)
    assert "W&B project aime24" in run.stdout
    assert "<benchmark>" not in run.stdout
    sample.run.saved_config.write_text("a: [unclosed\n")
    broken = cli("wandb", f"+rollouts_jsonl_fpath={sample.rollouts}", *online)
    assert broken.exit_code == 1
    assert "Malformed saved run config" in broken.stdout


def test_the_evalrdl_dry_run_does_not_flatten_metrics_it_never_sends(
    evalrdl_token, cli, make_sample_run
) -> None:
    sample = make_sample_run()
    aggregate = json.loads(sample.run.aggregate_metrics.read_text())
    del aggregate[0]["agent_ref"]
    sample.run.aggregate_metrics.write_text(json.dumps(aggregate))
    run = cli("evalrdl", f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run")
    assert run.exit_code == 0, run.output


def test_evalrdl_refuses_to_upload_a_directory_whose_saved_config_is_unmasked(
    evalrdl_token, cli, make_sample_run
) -> None:
    sample = make_sample_run(mask_saved_config=False)
    run = cli("evalrdl", f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run")
    assert run.exit_code == 1
    assert "holds values that look like live secrets" in run.stdout
    assert "policy_api_key" in run.stdout
    assert sample.canaries.found_in(run.output) == []


def test_a_secret_named_meta_key_is_refused_without_its_value(cli, sample_run) -> None:
    run = cli(
        "evalrdl", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "+meta.api_token=abcdef123456"
    )
    assert run.exit_code == 2
    assert "meta keys named like secrets are refused (api_token)" in run.stderr
    assert "abcdef123456" not in run.output


def test_the_mlflow_dry_run_warns_about_an_unmasked_config_and_plans_masked_params(
    cli, make_sample_run, caplog
) -> None:
    sample = make_sample_run(mask_saved_config=False)
    run = cli("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run")
    assert run.exit_code == 0, run.output
    assert "they are masked in this export" in run.stdout.splitlines()[0]
    assert sample.canaries.found_in(run.output + caplog.text) == []
