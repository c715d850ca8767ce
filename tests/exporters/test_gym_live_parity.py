"""The mlflow and wandb exports against NeMo Gym's own live exporters (``--with_gym``).

The same finished run goes to one store through Gym's live exporter (``nemo_gym.exporters``,
driven as Gym's rollout collection drives it) and to another through evalexport; both are read
back with the same client and compared: metric, param and tag names and values, and the
artifacts. Where Gym loses something evalexport keeps, the difference is stated here, and in
the README:

* Gym masks every config value whose key contains ``token``, ``key`` or ``header``
  (``max_tokens``, ``key_metrics``, ``tokenizer_path``...): its params show ``****`` where
  evalexport logs the saved config's (already masked) value.
* evalexport adds its own tags (``evalexport.*``: the fingerprint, the export's and the
  evaluation's times), the aggregate-metrics file as an artifact, the typed samples table
  beside Gym's rollouts table (``samples.json``, W&B's ``Samples``), and in W&B its
  fingerprint and the times in the summary (``evalexport/*``, ``evaluation/*``).
* Gym logs ``None`` metric values to W&B's summary; evalexport drops them (SPEC §1).
* Gym's W&B rollouts table holds each row as bytes, which W&B stores as a list of byte values;
  evalexport stores the JSON text, which W&B shows.
"""

from __future__ import annotations

import json
import os
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalexport.backends.mlflow.exporter import MLflowExporter
from evalexport.backends.mlflow.names import flatten_params, sanitize_name
from evalexport.backends.wandb.exporter import FINGERPRINT_KEY, WandbExporter
from evalexport.pipeline import export_run
from evalexport.results import ExportStatus
from evalexport.spec.options import parse_options
from tests.exporters.wandb_support import read_offline_run
from tests.support.gym import GymOracle
from tests.support.mlflow_server import read_runs

pytestmark = [pytest.mark.gym, pytest.mark.downloads]

TRICKY_METRICS = {
    "pass@1[avg-of-4]/accuracy": 43.1,
    "pass@1[avg-of-4]/accuracy/std_dev_across_runs": 2.7,
    "majority@4/judge:correct": 60.0,
    "time: wall (s)": 812.5,
    "..hidden/./path//x": 1.0,
    "ünïcode/准确率": 0.5,
    "quoted 'name' = \"x\"": 3,
    "a" * 140 + "/middle/" + "b" * 140: 7.0,
    "flag": True,
    "judge_model": "meta/llama-3.3-70b-instruct",
    "judge": {"score": 0.7},  # nested: Gym drops it, evalexport logs judge/score
    "optional": None,  # Gym sends None to W&B's summary; evalexport drops it
}


INTERPOLATED = {"HF_TOKEN": "not-a-real-token"}
"""A live Gym run resolves ``${oc.env:HF_TOKEN}`` from its environment; so does its exporter."""


def _gym_masked(config: Any) -> Any:
    """The config as Gym's exporters mask it (``recursively_hide_secrets``): a value whose key
    contains ``token``, ``key`` or ``header`` becomes ``****``, a list there ``****`` items."""

    def secret(key: str) -> bool:
        return any(word in key for word in ("token", "key", "header"))

    if not isinstance(config, dict):
        return config
    masked: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict):
            masked[key] = _gym_masked(value)
        elif isinstance(value, list):
            masked[key] = (
                ["****"] * len(value) if secret(key) else [_gym_masked(item) for item in value]
            )
        else:
            masked[key] = "****" if secret(key) else value
    return masked


@pytest.fixture
def tricky_run(make_sample_run):
    """A real-shaped run whose aggregate metrics carry names MLflow refuses as they are."""
    sample = make_sample_run(agents=("simple_agent",), tasks=3, repeats=2)
    aggregate = json.loads(sample.run.aggregate_metrics.read_text())
    aggregate[0]["agent_metrics"].update(TRICKY_METRICS)
    aggregate[0]["key_metrics"]["pass@1[avg-of-4]/accuracy"] = 43.1
    sample.run.aggregate_metrics.write_text(json.dumps(aggregate, indent=2))
    return sample


def _config_for(sample, **backend: Any) -> dict[str, Any]:
    return {**sample.run.read_saved_config(), **backend}


def _params(config: dict[str, Any], leave_out: set[str]) -> dict[str, str]:
    return {
        sanitize_name(key): value
        for key, value in flatten_params(config).items()
        if key.split(".")[0].split("[")[0] not in leave_out
    }


@settings(max_examples=300, deadline=None)
@given(
    names=st.lists(
        st.text(
            alphabet=st.sampled_from([*string.ascii_letters[:6], *"@[]:/.-_ ()%é准", "\t"]),
            max_size=30,
        )
        | st.text(alphabet="ab/.", min_size=240, max_size=300),
        min_size=1,
        max_size=20,
    )
)
def test_every_drawn_name_becomes_the_name_gyms_mlflow_exporter_logs(
    gym_oracle: GymOracle, names: list[str]
) -> None:
    expected = gym_oracle.mlflow_names(names)
    assert [sanitize_name(name) or None for name in names] == expected


def test_an_mlflow_export_lines_up_with_gyms_live_mlflow_run(
    gym_oracle: GymOracle, mlflow_python: Path, tricky_run, tmp_path: Path
) -> None:
    gym_uri, our_uri = f"sqlite:///{tmp_path / 'gym.db'}", f"sqlite:///{tmp_path / 'ours.db'}"
    names = {"mlflow_experiment_name": "parity", "mlflow_run_name": "live"}
    live = gym_oracle.live_export(
        "mlflow",
        config=_config_for(tricky_run, mlflow_tracking_uri=gym_uri, **names),
        rollouts=tricky_run.rollouts,
        aggregate=tricky_run.run.aggregate_metrics,
        environment={"MLFLOW_TRACKING_URI": gym_uri, **INTERPOLATED},
    )
    assert live["error"] is None, live
    assert live["warnings"] == []
    exporter = MLflowExporter()
    config = parse_options(
        exporter,
        {"rollouts_jsonl_fpath": str(tricky_run.rollouts), "mlflow_tracking_uri": our_uri, **names},
    )
    result = export_run(exporter, tricky_run.run, config)
    assert result.status is ExportStatus.SUCCEEDED, result.message

    def read(uri: str, artifact: str) -> dict[str, Any]:
        (run,) = read_runs(mlflow_python, uri, "parity", (artifact, tmp_path / artifact / uri[-7:]))
        return run

    gym, ours = read(gym_uri, "global_config.json"), read(our_uri, "global_config.json")
    kept_by_evalexport = {"simple_agent/judge/score": 0.7}
    assert ours["metrics"] == {**gym["metrics"], **kept_by_evalexport}
    assert "agent/pass_at_1_avg-of-4_/accuracy".replace("agent", "simple_agent") in ours["metrics"]
    # Each export names its own store and run; Gym's config carries those keys, the saved one not.
    own = {"mlflow_tracking_uri", "mlflow_tracking_token", *names}
    saved = tricky_run.run.read_saved_config()
    gym_params = {k: v for k, v in gym["params"].items() if k not in own}
    our_params = {k: v for k, v in ours["params"].items() if k not in own}
    assert our_params == _params(saved, own)
    assert gym_params == _params(_gym_masked(saved), own)
    assert sorted(our_params) == sorted(gym_params)
    lost_by_gym = {k for k in gym_params if gym_params[k] != our_params[k]}
    assert {gym_params[k] for k in lost_by_gym} == {"****"}
    assert {"max_tokens", "tokenizer_path", "key_prefix", "key_metrics_0_"} <= lost_by_gym

    def user_tags(run: dict[str, Any]) -> dict[str, str]:
        return {
            k: v
            for k, v in run["tags"].items()
            if not k.startswith(("mlflow.", "evalexport.")) or k == "mlflow.runName"
        }

    assert user_tags(ours) == user_tags(gym)
    assert ours["tags"]["simple_agent/judge_model"] == "meta/llama-3.3-70b-instruct"
    assert set(gym["artifacts"]) == {"global_config.json", "rollouts.json"}
    added = {tricky_run.run.aggregate_metrics.name, "samples.json"}  # beside Gym's
    assert set(ours["artifacts"]) == {*gym["artifacts"], *added}
    gym_config = json.loads(Path(gym["downloaded"]).read_text())
    our_config = json.loads(Path(ours["downloaded"]).read_text())
    assert our_config == saved
    assert {k: v for k, v in gym_config.items() if k not in own} == {
        k: v for k, v in _gym_masked(saved).items() if k not in own
    }
    gym_rows = read(gym_uri, "rollouts.json")
    our_rows = read(our_uri, "rollouts.json")
    gym_table = json.loads(Path(gym_rows["downloaded"]).read_text())
    our_table = json.loads(Path(our_rows["downloaded"]).read_text())
    assert our_table["columns"] == gym_table["columns"] == ["Rollout"]
    assert [json.loads(row[0]) for row in our_table["data"]] == [
        json.loads(row[0]) for row in gym_table["data"]
    ]


def test_a_wandb_export_lines_up_with_gyms_live_wandb_run(
    gym_oracle: GymOracle, wandb_python: Path, tricky_run, tmp_path: Path
) -> None:
    names = {"wandb_project": "parity", "wandb_name": "live"}
    gym_dir = tmp_path / "gym-results"
    live = gym_oracle.live_export(
        "wandb",
        config=_config_for(tricky_run, results_dir=str(gym_dir), wandb_api_key="x" * 40, **names),
        rollouts=tricky_run.rollouts,
        aggregate=tricky_run.run.aggregate_metrics,
        environment={"WANDB_MODE": "offline", "WANDB_SILENT": "true", **INTERPOLATED},
    )
    assert live["error"] is None, live
    exporter = WandbExporter()
    config = parse_options(
        exporter,
        {"rollouts_jsonl_fpath": str(tricky_run.rollouts), "wandb_mode": "offline", **names},
    )
    result = export_run(exporter, tricky_run.run, config)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    gym = read_offline_run(wandb_python, Path(live["run_dir"]).parent)
    ours = read_offline_run(wandb_python, Path(result.details["run_dir"]))
    assert ours["run"]["name"] == gym["run"]["name"] == "live"
    gym_summary = {k: v for k, v in gym["summary"].items() if not k.startswith("_")}
    our_summary = {k: v for k, v in ours["summary"].items() if not k.startswith("_")}
    assert our_summary.pop(FINGERPRINT_KEY)
    added_by_evalexport = ("evalexport/", "evaluation/", "Samples/")  # beside Gym's keys
    our_summary = {k: v for k, v in our_summary.items() if not k.startswith(added_by_evalexport)}
    table_keys = {"Rollouts/_type": "table-file", "Rollouts/ncols": 1}
    for key, value in table_keys.items():
        assert our_summary[key] == gym_summary[key] == value
    assert our_summary["Rollouts/nrows"] == gym_summary["Rollouts/nrows"] == 6
    assert our_summary.pop("simple_agent/judge/score") == 0.7  # Gym drops nested metrics
    assert "simple_agent/optional" not in our_summary
    assert {k: v for k, v in our_summary.items() if not k.startswith("Rollouts/")} == {
        k: v for k, v in gym_summary.items() if not k.startswith("Rollouts/") and v is not None
    }
    own = {"wandb_api_key", "results_dir", *names}
    gym_config = {k: v for k, v in gym["config"].items() if k != "_wandb" and k not in own}
    our_config = {k: v for k, v in ours["config"].items() if k != "_wandb" and k not in own}
    assert sorted(our_config) == sorted(gym_config)
    (gym_table,) = gym["tables"].values()
    (our_table,) = (v for k, v in ours["tables"].items() if k.startswith("Rollouts_"))
    assert our_table["columns"] == gym_table["columns"] == ["Rollout"]
    assert len(our_table["data"]) == len(gym_table["data"]) == tricky_run.rollout_count
    # Gym puts orjson's bytes in the cell, which W&B stores as a list of byte values: the row
    # is there, but no W&B view shows it as text. evalexport stores the JSON text itself.
    assert all(isinstance(row[0], list) for row in gym_table["data"])
    assert [json.loads(row[0]) for row in our_table["data"]] == [
        json.loads(bytes(row[0])) for row in gym_table["data"]
    ]


def test_the_run_gyms_live_exporter_made_is_named_by_the_export(
    gym_oracle: GymOracle, mlflow_server, mlflow_python: Path, make_sample_run
) -> None:
    """An evaluation that logged live (Gym's MLflow exporter, configured by the global
    config's ``mlflow_*`` keys) and is then exported: the export finds Gym's run from the
    run's config, names it, and tags its own second run with it. Gym records nothing of its
    live run beside the rollouts."""
    from evalexport.masking import save_run_config

    sample = make_sample_run(agents=("simple_agent",), tasks=2, repeats=2)
    names = {
        "mlflow_tracking_uri": mlflow_server.url,
        "mlflow_experiment_name": "gym-live",
        "mlflow_run_name": "aime-live",
    }
    config = _config_for(sample, **names)
    live = gym_oracle.live_export(
        "mlflow",
        config=config,
        rollouts=sample.rollouts,
        aggregate=sample.run.aggregate_metrics,
        environment={"MLFLOW_TRACKING_URI": mlflow_server.url, **INTERPOLATED},
    )
    assert live["error"] is None, live
    assert sorted(path.name for path in sample.run.run_dir.iterdir() if "live" in path.name) == []
    sample.run.saved_config.unlink()
    save_run_config(config, sample.rollouts)  # the config Gym ran with, as save-config keeps it
    exporter = MLflowExporter()
    options = {
        "rollouts_jsonl_fpath": str(sample.rollouts),
        "mlflow_tracking_uri": mlflow_server.url,
    }
    result = export_run(exporter, sample.run, parse_options(exporter, options))
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert result.details["live_run_id"] == live["run_id"]
    assert any(f"as MLflow run {live['run_id']} ('aime-live'" in n for n in result.notices)
    # the export lands in this test's own experiment (the mlflow_server fixture's default)
    (ours,) = read_runs(mlflow_python, mlflow_server.url, os.environ["MLFLOW_EXPERIMENT_NAME"])
    assert ours["tags"]["evalexport.live_run_id"] == live["run_id"]
