"""evalexport save-config: the saved config of a run made without one (SPEC §2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from evalexport.launch_config import LaunchConfigError, merge_launch_config
from evalexport.results import ExportStatus


@pytest.fixture
def launch_files(tmp_path: Path, canaries) -> list[Path]:
    """The config files of a NeMo Gym launch: a base config and a benchmark's, secrets in both."""
    base = tmp_path / "configs" / "base.yaml"
    base.parent.mkdir()
    base.write_text(
        yaml.safe_dump(
            {
                "policy_model_name": "nvidia/nemotron-nano-9b-v2",
                "policy_api_key": canaries.by_key["policy_api_key"],
                "hf_token": "${oc.env:HF_TOKEN}",
                "responses_create_params": {"max_output_tokens": 1024, "temperature": 0.6},
                "tags": ["math"],
            }
        )
    )
    bench = tmp_path / "configs" / "aime24.yaml"
    bench.write_text(
        yaml.safe_dump(
            {
                "responses_create_params": {"temperature": 1.0},
                "judge": {"endpoint": f"https://j:{canaries.in_values['url_password']}@judge/v1"},
            }
        )
    )
    return [base, bench]


def test_files_merge_in_order_then_overrides_apply_as_hydra_applies_them(launch_files) -> None:
    config = merge_launch_config(
        launch_files,
        ["responses_create_params.max_output_tokens=2048", "+num_repeats=4", "~tags"],
    )
    assert config["responses_create_params"] == {"max_output_tokens": 2048, "temperature": 1.0}
    assert config["num_repeats"] == 4
    assert "tags" not in config
    assert config["hf_token"] == "${oc.env:HF_TOKEN}"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("responses_create_params.tempreature=1", "the config files do not set"),
        ("+policy_model_name=x", "is already set by the config files"),
        ("~nothing", "there is no nothing to remove"),
        ("novalue", "has no '='"),
        # Was a yaml ParserError traceback (found by breaking overrides at random).
        ("++x=[1,2", r"its value is not YAML: did not find expected ',' or '\]'"),
    ],
)
def test_an_override_that_does_not_fit_the_files_is_a_usage_error(
    launch_files, override, message
) -> None:
    with pytest.raises(LaunchConfigError, match=message) as raised:
        merge_launch_config(launch_files, [override])
    assert raised.value.usage


def test_the_command_writes_the_masked_unresolved_config_beside_the_rollouts(
    cli, make_sample_run, launch_files, canaries
) -> None:
    sample = make_sample_run(saved_config=False)
    run = cli("save-config", sample.rollouts, *launch_files, "+num_repeats=4")
    assert run.exit_code == 0, run.output
    assert run.stdout.startswith(f"succeeded: saved {sample.run.saved_config}")
    assert "policy_api_key" in run.stdout
    assert "secret values masked:" in run.stdout or "(1 secret value masked:" in run.stdout
    assert "(1 secret values" not in run.stdout
    saved = yaml.safe_load(sample.run.saved_config.read_text())
    assert saved["policy_api_key"] == "****"
    assert saved["hf_token"] == "${oc.env:HF_TOKEN}"
    assert saved["judge"]["endpoint"] == "https://j:****@judge/v1"
    assert canaries.found_in(run.output + sample.run.saved_config.read_text()) == []


def test_an_existing_saved_config_is_never_overwritten(cli, sample_run, launch_files) -> None:
    before = sample_run.run.saved_config.read_bytes()
    run = cli("save-config", sample_run.rollouts, *launch_files)
    assert run.exit_code == 1
    assert "already exists; delete it" in run.stdout
    assert sample_run.run.saved_config.read_bytes() == before


def test_a_secret_override_is_not_echoed_in_a_usage_error(
    cli, make_sample_run, launch_files, canaries
) -> None:
    sample = make_sample_run(saved_config=False)
    secret = canaries.by_key["wandb_api_key"]
    run = cli("save-config", sample.rollouts, *launch_files, f"wandb_api_key={secret}")
    assert run.exit_code == 2
    assert "write +wandb_api_key=... to add it" in run.stderr
    assert secret not in run.output
    assert not sample.run.saved_config.exists()


def test_a_missing_config_file_fails_naming_it(cli, make_sample_run, tmp_path) -> None:
    sample = make_sample_run(saved_config=False)
    run = cli("save-config", sample.rollouts, tmp_path / "nope.yaml", "--json")
    assert run.exit_code == 1
    assert json.loads(run.stdout)["message"] == f"Config file not found: {tmp_path / 'nope.yaml'}"


def test_the_missing_config_message_names_the_command(cli, make_sample_run) -> None:
    sample = make_sample_run(saved_config=False)
    run = cli("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run")
    assert run.exit_code == 1
    assert f"evalexport save-config {sample.rollouts} CONFIG.yaml" in run.stdout


def test_two_runs_in_one_folder_are_named_when_the_metrics_are_not_found(
    cli, make_sample_run
) -> None:
    sample = make_sample_run(aggregate=False, other_run_rollouts="example_rollouts.jsonl")
    (sample.run.run_dir / "example_metrics.json").write_text("{}")
    run = cli("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run")
    assert run.exit_code == 1
    assert "other runs' rollouts (example_rollouts.jsonl)" in run.stdout
    assert "metrics files of other names (example_metrics.json)" in run.stdout
    assert "Keep each run in a directory of its own" in run.stdout


@pytest.mark.downloads
def test_a_gym_run_without_a_saved_config_exports_after_save_config(
    cli, make_sample_run, launch_files, mlflow_python
) -> None:
    sample = make_sample_run(saved_config=False)
    refused = cli("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}")
    assert "Saved run config not found" in refused.stdout
    assert cli("save-config", sample.rollouts, *launch_files).exit_code == 0
    exported = cli("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}", "--json")
    assert exported.exit_code == 0, exported.output
    result = json.loads(exported.stdout)
    assert result["status"] == ExportStatus.SUCCEEDED
    assert Path("mlruns.db").is_file()


def test_config_paths_inside_a_file_are_pulled_in_before_it_as_gym_does(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "model.yaml").write_text("temperature: 0.2\nmodel: base-model\n")
    (tmp_path / "conf" / "policy.yaml").write_text(
        "config_paths: [model.yaml]\nmodel: tuned-model\n"
    )
    (tmp_path / "bench.yaml").write_text(
        "config_paths: [conf/policy.yaml]\ntemperature: 0.7\nbenchmark: aime24\n"
    )
    config = merge_launch_config([tmp_path / "bench.yaml"], ["+num_repeats=4"])
    assert config["model"] == "tuned-model"  # the including file overrides its include
    assert config["temperature"] == 0.7
    assert config["benchmark"] == "aime24"
    assert config["num_repeats"] == 4


def test_a_missing_or_cyclic_include_is_named(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.yaml").write_text("config_paths: [missing.yaml]\n")
    with pytest.raises(
        LaunchConfigError, match=r"config_paths entry 'missing\.yaml' was not found"
    ):
        merge_launch_config([tmp_path / "a.yaml"])
    (tmp_path / "b.yaml").write_text("config_paths: [c.yaml]\n")
    (tmp_path / "c.yaml").write_text("config_paths: [b.yaml]\n")
    with pytest.raises(LaunchConfigError, match="include each other in a cycle"):
        merge_launch_config([tmp_path / "b.yaml"])


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "datasets:\n  a: 1\nother: 2\ndatasets:\n  b: 2\n",
            "found duplicate key datasets (line 4, column 1), "
            "while constructing a mapping (line 1, column 1)",
        ),
        (
            "a: [1, 2\nb: 3\n",
            "did not find expected ',' or ']' (line 2, column 2), "
            "while parsing a flow sequence (line 1, column 4)",
        ),
    ],
)
def test_a_yaml_error_keeps_the_parsers_words_and_where(tmp_path: Path, text, words) -> None:
    config = tmp_path / "launch.yaml"
    config.write_text(text)
    with pytest.raises(LaunchConfigError) as refused:
        merge_launch_config([config], [])
    assert str(refused.value) == f"Config file {config} is not valid YAML: {words}"
