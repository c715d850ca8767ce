"""RunArtifacts (SPEC §1): derived paths, missing files, the directory rule, streaming reads."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from evalexport.run import RunArtifacts, RunFileError


def test_every_file_is_derived_from_the_rollouts_path(tmp_path: Path) -> None:
    run = RunArtifacts.from_rollouts_path(tmp_path / "aime24_rollouts.jsonl")
    assert run.run_dir == tmp_path
    assert run.stem == "aime24_rollouts"
    assert run.aggregate_metrics == tmp_path / "aime24_rollouts_aggregate_metrics.json"
    assert run.saved_config == tmp_path / "aime24_rollouts_resolved_config.yaml"
    assert run.materialized_inputs == tmp_path / "aime24_rollouts_materialized_inputs.jsonl"
    assert run.failures == tmp_path / "aime24_rollouts_failures.jsonl"
    assert run.sidecar_dir == tmp_path / "aime24_rollouts"
    assert run.export_marker("mlflow") == tmp_path / "aime24_rollouts_mlflow_export_done"


def test_a_relative_rollouts_path_is_made_absolute_against_the_working_directory(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert RunArtifacts.from_rollouts_path("r.jsonl").run_dir == tmp_path


def test_a_symlinked_rollouts_file_keeps_the_links_directory(make_sample_run) -> None:
    sample = make_sample_run("elsewhere")
    link_dir = sample.rollouts.parent.parent / "linked"
    link_dir.mkdir()
    link = link_dir / "aime24_rollouts.jsonl"
    link.symlink_to(sample.rollouts)
    run = RunArtifacts.from_rollouts_path(link)
    assert run.run_dir == link_dir
    assert run.aggregate_metrics == link_dir / "aime24_rollouts_aggregate_metrics.json"
    reason = run.missing_file_reason(needs_metrics_and_config=True)
    assert reason is not None
    assert reason.startswith(
        f"Aggregate metrics not found: {link_dir / 'aime24_rollouts_aggregate_metrics.json'}. "
    )


def test_missing_aggregate_metrics_are_named_with_their_path(make_sample_run) -> None:
    run = make_sample_run(aggregate=False).run
    reason = run.missing_file_reason(needs_metrics_and_config=True)
    assert reason is not None
    assert reason.startswith(f"Aggregate metrics not found: {run.aggregate_metrics}. ")
    assert run.missing_file_reason(needs_metrics_and_config=False) is None


def test_a_missing_saved_config_is_named_with_its_path_and_the_command_that_saves_it(
    make_sample_run,
) -> None:
    run = make_sample_run(saved_config=False).run
    assert run.missing_file_reason(needs_metrics_and_config=True) == (
        f"Saved run config not found: {run.saved_config}. A run made without one (NeMo Gym "
        "saves none) gets it from the config files and overrides it was launched with: "
        f"evalexport save-config {run.rollouts} CONFIG.yaml [CONFIG.yaml ...] [key=value ...]"
    )


def test_a_missing_rollouts_file_is_named(tmp_path: Path) -> None:
    run = RunArtifacts.from_rollouts_path(tmp_path / "x_rollouts.jsonl")
    assert run.missing_file_reason(needs_metrics_and_config=False) == (
        f"Rollouts file not found: {tmp_path / 'x_rollouts.jsonl'}"
    )


def test_missing_aggregate_metrics_name_gyms_reward_profiling_of_this_run(
    make_sample_run,
) -> None:
    """A run collected without aggregate metrics is told how Gym writes metrics that are read
    in their place, naming its own materialized inputs (``tests/exporters/test_gym_runs.py``
    runs the command with Gym)."""
    run = make_sample_run(aggregate=False, sidecars=True).run
    assert run.missing_file_reason(needs_metrics_and_config=True) == (
        f"Aggregate metrics not found: {run.aggregate_metrics}. NeMo Gym's rollout collection "
        "writes them when it ends; for rollouts without them, Gym's reward profiling writes "
        "the agent-level metrics, read in their place, with no model or server: gym eval "
        f"profile --inputs {run.materialized_inputs} --rollouts {run.rollouts}"
    )
    run.materialized_inputs.unlink()
    reason = run.missing_file_reason(needs_metrics_and_config=True)
    assert reason is not None
    assert reason.endswith(
        f"gym eval profile --inputs INPUTS.jsonl --rollouts {run.rollouts}, INPUTS.jsonl being "
        "the materialized inputs rollout collection writes beside the rollouts "
        "(aime24_rollouts_materialized_inputs.jsonl)"
    )


def test_the_reward_profiling_command_quotes_a_path_a_shell_would_split(tmp_path) -> None:
    from evalexport.testing.factory import make_run

    run = make_run(tmp_path / "eval runs" / "it's mine", aggregate=False, sidecars=True).run
    reason = run.missing_file_reason(needs_metrics_and_config=True)
    assert reason is not None
    command = shlex.split(reason.split("with no model or server: ", 1)[1])
    assert command == [
        "gym",
        "eval",
        "profile",
        "--inputs",
        str(run.materialized_inputs),
        "--rollouts",
        str(run.rollouts),
    ]


def test_gyms_reward_profiling_files_are_this_runs_not_another_runs(make_sample_run) -> None:
    """``gym eval profile`` writes ``<stem>_repeat_level_metrics.json`` and
    ``<stem>_reward_profiling.jsonl`` beside the rollouts: the run's own files, not metrics
    of another run (the advice was to keep each run in a directory of its own)."""
    run = make_sample_run(aggregate=False).run
    (run.run_dir / "aime24_rollouts_repeat_level_metrics.json").write_text("[]")
    (run.run_dir / "aime24_rollouts_reward_profiling.jsonl").write_text("")
    (run.run_dir / "gpqa_metrics.json").write_text("[]")
    reason = run.missing_file_reason(needs_metrics_and_config=True)
    assert reason is not None
    assert "metrics files of other names (gpqa_metrics.json), none of them this run's" in reason
    roles = {item.path.name: item.role for item in run.files()}
    assert roles["aime24_rollouts_repeat_level_metrics.json"] == "repeat-level metrics"
    assert roles["aime24_rollouts_reward_profiling.jsonl"] == "reward profiling"


@pytest.mark.parametrize("other", ["rollouts.jsonl", "gpqa_rollouts.jsonl"])
def test_a_directory_holding_another_runs_rollouts_is_refused_for_directory_exports(
    make_sample_run, other: str
) -> None:
    run = make_sample_run(other_run_rollouts=other).run
    reason = run.shared_directory_reason()
    assert reason is not None
    assert other in reason
    assert "Keep each run in a directory of its own" in reason


def test_sidecars_and_similar_names_do_not_count_as_another_run(make_sample_run) -> None:
    sample = make_sample_run(sidecars=True)
    (sample.run.run_dir / "rollouts.jsonl.bak").write_text("")
    (sample.run.run_dir / "my_rollouts.json").write_text("")
    assert sample.run.shared_directory_reason() is None


def test_rollouts_stream_with_line_numbers_and_skip_blank_lines(make_sample_run) -> None:
    sample = make_sample_run(tasks=1, agents=("a",), repeats=3, blank_lines=[1, 3])
    rollouts = list(sample.run.iter_rollouts())
    assert [r.line_number for r in rollouts] == [2, 4, 5]
    assert [r.rollout_index for r in rollouts] == [0, 1, 2]
    assert rollouts[0].agent_name == "a"


def test_a_malformed_line_fails_with_its_line_number(make_sample_run) -> None:
    sample = make_sample_run(tasks=2, agents=("a",), repeats=2, malformed_lines=[3])
    rollouts = sample.run.iter_rollouts()
    assert next(rollouts).line_number == 1
    assert next(rollouts).line_number == 2
    with pytest.raises(RunFileError, match=r"line 3 is not valid JSON \(Expecting") as error:
        next(rollouts)
    assert str(sample.rollouts) in str(error.value)


def test_an_integer_longer_than_python_reads_is_a_malformed_line_not_a_traceback(
    tmp_path: Path,
) -> None:
    """The hostile review of #65: a 5,001-digit integer made ``inspect`` print a traceback
    and a tracking dry run say ``unexpected error`` (``json.loads`` raises ``ValueError``)."""
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text('{"a": 1}\n{"big": ' + "9" * 5001 + "}\n")
    with pytest.raises(RunFileError, match=r"line 2 cannot be read \(Exceeds the limit"):
        list(RunArtifacts.from_rollouts_path(rollouts).iter_rollouts())


def test_a_line_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text('{"a": 1}\n[1, 2]\n')
    with pytest.raises(RunFileError, match="line 2 is a JSON list, expected an object"):
        list(RunArtifacts.from_rollouts_path(rollouts).iter_rollouts())


def test_a_line_that_is_not_utf8_is_refused_with_its_line_number(tmp_path: Path) -> None:
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_bytes(b'{"a": 1}\n{"b": "\xff"}\n')
    with pytest.raises(RunFileError, match="line 2 is not UTF-8"):
        list(RunArtifacts.from_rollouts_path(rollouts).iter_rollouts())


def test_rollouts_are_read_lazily(make_sample_run) -> None:
    sample = make_sample_run(tasks=2, agents=("a",), repeats=2, malformed_lines=[4])
    first = next(sample.run.iter_rollouts())
    assert first.line_number == 1  # a bad line further down does not stop the first read


def test_other_keys_of_a_rollout_are_kept_as_they_are(tmp_path: Path) -> None:
    record = {
        "_ng_task_index": 1,
        "_ng_rollout_index": 0,
        "agent_ref": {"name": "a"},
        "reward": 0.5,
        "custom": {"nested": [1, "ü"]},
    }
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(json.dumps(record) + "\n")
    (only,) = RunArtifacts.from_rollouts_path(rollouts).iter_rollouts()
    assert only.record == record


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "Malformed aggregate metrics"),
        ('{"agent_ref": {}}', "expected a list with one entry per agent, found a JSON dict"),
        ('[{"agent_metrics": {}}]', "entry 0 has no agent_ref.name"),
    ],
)
def test_malformed_aggregate_metrics_are_refused_with_the_reason(
    make_sample_run, content: str, message: str
) -> None:
    run = make_sample_run().run
    run.aggregate_metrics.write_text(content)
    with pytest.raises(RunFileError, match=message):
        run.read_aggregate_metrics()


def test_a_saved_config_that_is_not_a_mapping_is_refused(make_sample_run) -> None:
    run = make_sample_run().run
    run.saved_config.write_text("- a\n- b\n")
    with pytest.raises(RunFileError, match="expected a mapping, found list"):
        run.read_saved_config()


def test_files_lists_each_entry_with_its_role(make_sample_run) -> None:
    sample = make_sample_run(sidecars=True, other_run_rollouts="gpqa_rollouts.jsonl")
    roles = {item.path.name: item.role for item in sample.run.files()}
    assert roles == {
        "aime24_rollouts": "sidecars",
        "aime24_rollouts.jsonl": "rollouts",
        "aime24_rollouts_aggregate_metrics.json": "aggregate metrics",
        "aime24_rollouts_materialized_inputs.jsonl": "materialized inputs",
        "aime24_rollouts_resolved_config.yaml": "saved config",
        "gpqa_rollouts.jsonl": "other run's rollouts",
    }
    assert all(item.size_bytes > 0 for item in sample.run.files())
    assert os.path.isdir(sample.run.sidecar_dir)


def test_a_run_with_no_rollouts_is_refused_by_the_tracking_exporters(
    cli, make_sample_run, evalrdl_token
) -> None:
    sample = make_sample_run()
    sample.rollouts.write_text("\n\n")
    for exporter in ("mlflow", "wandb", "evalrdl"):
        run = cli(exporter, f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run")
        assert run.exit_code == 1, exporter
        assert "Rollouts file contains no records" in run.stdout


@pytest.mark.parametrize("libyaml", [True, False])
def test_a_config_nested_too_deeply_is_a_clear_failure_not_a_traceback(
    cli, make_sample_run, monkeypatch, libyaml
) -> None:
    import yaml

    if not libyaml:  # PyYAML's own parser recurses where libyaml stops at its depth limit
        monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    sample = make_sample_run()
    sample.run.saved_config.write_text("x: " + "[" * 3000 + "]" * 3000 + "\n")
    run = cli("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run")
    assert run.exit_code == 1
    assert run.stdout.startswith(f"failed: Malformed saved run config {sample.run.saved_config}")
    assert "nest" in run.stdout
    inspected = cli("inspect", sample.rollouts)
    assert "Malformed saved run config" in inspected.stdout


def test_a_truncated_rollouts_line_names_its_true_column(make_sample_run) -> None:
    from evalexport.run import RunFileError

    sample = make_sample_run(malformed_lines=[3])
    with pytest.raises(RunFileError, match=r"line 3 is not valid JSON \(.* at column 37\)"):
        list(sample.run.iter_rollouts())


def test_a_cache_path_that_is_a_file_is_named_not_reported_as_a_bug(
    cli, sample_run, tmp_path, monkeypatch
) -> None:
    blocker = tmp_path / "cache-is-a-file"
    blocker.write_text("")
    monkeypatch.setenv("EVALEXPORT_CACHE_DIR", str(blocker))
    run = cli("mlflow", f"+rollouts_jsonl_fpath={sample_run.rollouts}")
    assert run.exit_code == 1
    assert run.stdout.startswith(f"failed: Cannot access {blocker}")
    assert "unexpected error" not in run.stdout


def test_the_checkouts_ignore_rules_cover_what_an_export_writes_beside_a_run() -> None:
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        pytest.skip("not a git checkout (an installed copy of the tests)")
    for written in (
        "examples/aime24/aime24_rollouts_mlflow_export_done",
        "examples/aime24/aime24_rollouts_wandb_export_done",
        "mlruns.db",
        "mlartifacts/0/x",
    ):
        checked = subprocess.run(
            ["git", "-C", str(root), "check-ignore", "-q", written], check=False
        )
        assert checked.returncode == 0, f"{written} is not ignored by the checkout's .gitignore"
