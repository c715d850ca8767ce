"""The atif exporter end to end (SPEC §4): strict, atomic, streaming, validated output."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import atif
import pytest


def _atif(cli, rollouts: Path, output: Path, *extra: str):
    return cli(
        "atif",
        f"+rollouts_jsonl_fpath={rollouts}",
        f"+output_dirpath={output}",
        "+agent_version=0.3.1",
        *extra,
    )


def _tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir()) if parent.exists() else []


def test_every_rollout_becomes_one_valid_trajectory_with_a_manifest(
    cli, sample_run, tmp_path
) -> None:
    output = tmp_path / "out" / "atif"
    run = _atif(cli, sample_run.rollouts, output, "--json")
    assert run.exit_code == 0, run.output
    result = json.loads(run.stdout)
    assert result["status"] == "succeeded"
    assert result["details"]["trajectory_count"] == sample_run.rollout_count == 48
    files = sorted(output.glob("*.json"))
    assert len(files) == 48
    manifest = [json.loads(line) for line in (output / "manifest.jsonl").read_text().splitlines()]
    assert [entry["file"] for entry in manifest] == [f.name for f in files]
    rollouts = [json.loads(line) for line in sample_run.rollouts.read_text().splitlines()]
    for entry, rollout, path in zip(manifest, rollouts, files, strict=True):
        data = json.loads(path.read_text())
        trajectory = atif.Trajectory.model_validate(data)
        assert trajectory.schema_version == "ATIF-v1.7"
        assert trajectory.session_id == "aime24_rollouts"
        assert trajectory.agent.version == "0.3.1"
        assert (entry["task_index"], entry["rollout_index"], entry["reward"]) == (
            rollout["_ng_task_index"],
            rollout["_ng_rollout_index"],
            rollout["reward"],
        )
        assert trajectory.extra["reward"] == rollout["reward"]
        assert entry["step_count"] == len(trajectory.steps) == trajectory.final_metrics.total_steps
    assert _leftovers(output.parent) == ["atif"]


def test_the_tool_agent_trajectories_carry_tool_calls_and_observations(
    cli, sample_run, tmp_path
) -> None:
    output = tmp_path / "atif"
    _atif(cli, sample_run.rollouts, output)
    tool_steps = [
        step
        for path in output.glob("*.json")
        for step in json.loads(path.read_text())["steps"]
        if step.get("tool_calls")
    ]
    assert tool_steps
    for step in tool_steps:
        call_ids = {call["tool_call_id"] for call in step["tool_calls"]}
        assert {result["source_call_id"] for result in step["observation"]["results"]} == call_ids
        assert all(isinstance(call["arguments"], dict) for call in step["tool_calls"])


@pytest.mark.parametrize(
    ("knobs", "expected"),
    [
        (
            {"rows_with_gaps": [2, 7]},
            [
                "line 3 (task 0, rollout 2): turns_unavailable",
                "line 8 (task 0, rollout 3): turns_unavailable",
            ],
        ),
        (
            {"rows_without_trajectory": [0, 40]},
            [
                "line 1 (task 0, rollout 0): no ng_trajectory",
                "line 41 (task 5, rollout 0): no ng_trajectory",
            ],
        ),
    ],
)
def test_coverage_gaps_fail_the_whole_export_naming_rows_and_leave_nothing(
    cli, make_sample_run, tmp_path, knobs, expected
) -> None:
    sample = make_sample_run(**knobs)
    output = tmp_path / "out" / "atif"
    run = _atif(cli, sample.rollouts, output)
    assert run.exit_code == 1
    assert run.stdout.startswith(
        "failed: source coverage gaps are not supported by strict export: 2 rollouts"
    )
    for row in expected:
        assert row in run.stdout
    assert not output.exists()
    assert not (tmp_path / "out").exists()


def test_a_malformed_line_in_the_middle_fails_with_its_line_number_and_leaves_nothing(
    cli, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run(malformed_lines=[20])
    output = tmp_path / "atif"
    run = _atif(cli, sample.rollouts, output)
    assert run.exit_code == 1
    assert "line 20 is not valid JSON" in run.stdout
    assert _leftovers(tmp_path) == ["run"]


def test_exporting_twice_fails_the_second_time_and_keeps_the_first_output(
    cli, sample_run, tmp_path
) -> None:
    output = tmp_path / "atif"
    assert _atif(cli, sample_run.rollouts, output).exit_code == 0
    before = _tree_digest(output)
    again = _atif(cli, sample_run.rollouts, output, "--json")
    assert again.exit_code == 1
    assert json.loads(again.stdout)["message"].startswith(f"Output path already exists: {output}")
    assert _tree_digest(output) == before
    assert _leftovers(tmp_path) == ["atif", "run"]


def test_the_run_directory_is_not_changed(cli, sample_run, tmp_path) -> None:
    before = _tree_digest(sample_run.run.run_dir)
    _atif(cli, sample_run.rollouts, tmp_path / "atif")
    assert _tree_digest(sample_run.run.run_dir) == before


def test_options_default_from_the_run_and_can_be_overridden(cli, sample_run, tmp_path) -> None:
    _atif(
        cli,
        sample_run.rollouts,
        tmp_path / "atif",
        "+session_id=nightly-42",
        "+agent_name=math_agent",
    )
    data = json.loads(next((tmp_path / "atif").glob("*.json")).read_text())
    assert data["session_id"] == "nightly-42"
    assert data["agent"]["name"] == "math_agent"


def test_agent_version_is_required(cli, sample_run, tmp_path) -> None:
    run = cli(
        "atif", f"+rollouts_jsonl_fpath={sample_run.rollouts}", f"+output_dirpath={tmp_path / 'x'}"
    )
    assert run.exit_code == 2
    assert "missing required option +agent_version" in run.stderr


def test_an_empty_rollouts_file_fails_and_leaves_nothing(cli, tmp_path) -> None:
    rollouts = tmp_path / "run" / "empty_rollouts.jsonl"
    rollouts.parent.mkdir()
    rollouts.write_text("\n")
    run = _atif(cli, rollouts, tmp_path / "atif")
    assert run.exit_code == 1
    assert "holds no rollouts" in run.stdout
    assert _leftovers(tmp_path) == ["run"]


def test_the_aggregate_metrics_and_saved_config_are_not_needed(
    cli, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run(aggregate=False, saved_config=False)
    assert _atif(cli, sample.rollouts, tmp_path / "atif").exit_code == 0


def test_dry_run_writes_nothing(cli, sample_run, tmp_path) -> None:
    run = _atif(cli, sample_run.rollouts, tmp_path / "atif", "--dry-run")
    assert run.exit_code == 0
    assert f"target: {tmp_path / 'atif'}" in run.stdout
    assert not (tmp_path / "atif").exists()


def test_no_canary_secret_reaches_the_output(cli, sample_run, tmp_path) -> None:
    run = _atif(cli, sample_run.rollouts, tmp_path / "atif", "--json")
    assert sample_run.canaries.found_in(run.output) == []
    assert sample_run.canaries.found_in_tree(tmp_path / "atif") == []


def _python_312_or_newer() -> str | None:
    """An interpreter that really runs Python >= 3.12 (pyenv shims may exist and fail)."""
    if sys.version_info >= (3, 12):
        return sys.executable
    pyenv_versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [
        str(p / "bin" / "python") for p in sorted(pyenv_versions.glob("3.1[23]*"), reverse=True)
    ]
    candidates += [found for name in ("python3.13", "python3.12") if (found := shutil.which(name))]
    for candidate in candidates:
        probe = subprocess.run(
            [candidate, "-c", "import sys; assert sys.version_info >= (3, 12)"],
            capture_output=True,
            check=False,
        )
        if probe.returncode == 0:
            return candidate
    return None


@pytest.fixture(scope="session")
def harbor_python(
    tmp_path_factory: pytest.TempPathFactory, evalexport_download_cache: Path
) -> Path:
    """A virtual environment of its own with harbor installed (Python >= 3.12)."""
    interpreter = _python_312_or_newer()
    if interpreter is None:
        pytest.skip("harbor's validator needs Python >= 3.12, and none is installed")
    environment = tmp_path_factory.mktemp("harbor") / "venv"
    subprocess.run([interpreter, "-m", "venv", str(environment)], check=True)
    python = environment / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "harbor"],
        check=True,
        timeout=900,
        env={**os.environ, "PIP_CACHE_DIR": str(evalexport_download_cache / "pip")},
    )
    return python


@pytest.mark.downloads
def test_every_trajectory_passes_harbors_own_validator(
    cli, sample_run, tmp_path, harbor_python: Path
) -> None:
    output = tmp_path / "atif"
    assert _atif(cli, sample_run.rollouts, output).exit_code == 0
    files = sorted(output.glob("*.json"))
    assert len(files) == 48
    for path in files:
        completed = subprocess.run(
            [harbor_python, "-m", "harbor.utils.trajectory_validator", str(path)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert completed.returncode == 0, f"{path.name}: {completed.stdout}{completed.stderr}"
        assert "Trajectory is valid" in completed.stdout


@pytest.mark.downloads
def test_harbors_validator_rejects_a_broken_trajectory(
    cli, sample_run, tmp_path, harbor_python: Path
) -> None:
    output = tmp_path / "atif"
    _atif(cli, sample_run.rollouts, output)
    broken = tmp_path / "broken.json"
    data = json.loads(next(output.glob("*.json")).read_text())
    data["steps"][0]["reward"] = 1.0
    broken.write_text(json.dumps(data))
    completed = subprocess.run(
        [harbor_python, "-m", "harbor.utils.trajectory_validator", str(broken)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 1
    assert "unexpected field" in completed.stderr
