"""Runs NeMo Gym itself ships, exported with the real SDKs: what a Gym user meets first.

Gym 0.7.0's wheel holds an example run for each resources server, under
``resources_servers/<name>/data/example_rollouts.jsonl``; some hold only the flat
``example_rollouts_agent_metrics.json`` of older runs. Each is copied as Gym wrote it, given
the config Gym ships beside it (``evalexport save-config``, as a user of a run made without
one does), and exported: the metrics arrive by Gym's names, the run named by its benchmark.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from evalexport.metrics import flatten_metrics
from evalexport.run import RunArtifacts
from evalexport.testing.gym import GymOracle
from evalexport.testing.mlflow_server import read_runs
from tests.exporters.wandb_support import read_offline_run

pytestmark = [pytest.mark.downloads, pytest.mark.gym]


def _gyms_example_run(gym_oracle: GymOracle, server: str, into: Path, cli) -> RunArtifacts:
    """Gym's example run of ``server``, copied into ``into`` as its wheel lays it out, its saved config made from the server's own config files."""
    source = Path(gym_oracle.site_packages) / "resources_servers" / server
    data = into / "resources_servers" / server / "data"
    shutil.copytree(source / "data", data)
    run = RunArtifacts.from_rollouts_path(data / "example_rollouts.jsonl")
    configs = sorted(str(path) for path in (source / "configs").glob("*.yaml"))
    saved = cli("save-config", run.rollouts, *configs)
    assert saved.exit_code == 0, saved.output
    return run


def test_an_older_gym_run_exports_its_agent_level_metrics_to_mlflow(
    cli, gym_oracle: GymOracle, mlflow_server, mlflow_python, tmp_path
) -> None:
    run = _gyms_example_run(gym_oracle, "ether0", tmp_path, cli)
    assert not (run.run_dir / "example_rollouts_aggregate_metrics.json").exists()
    assert run.aggregate_metrics == run.agent_metrics
    exported = cli(
        "mlflow",
        f"+rollouts_jsonl_fpath={run.rollouts}",
        f"+mlflow_tracking_uri={mlflow_server.url}",
    )
    assert exported.exit_code == 0, exported.output
    (stored,) = read_runs(mlflow_python, mlflow_server.url, "ether0")
    assert stored["run_name"] == "ether0-resources_servers"
    flat = json.loads(run.agent_metrics.read_text())[0]
    expected = {
        f"ether0_simple_agent/{name}": value for name, value in flat.items() if name != "agent_ref"
    }
    assert len(expected) == 20
    assert stored["metrics"] == pytest.approx(expected)


def test_an_older_gym_run_exports_its_agent_level_metrics_to_wandb(
    cli, gym_oracle: GymOracle, wandb_python, tmp_path
) -> None:
    run = _gyms_example_run(gym_oracle, "ether0", tmp_path, cli)
    exported = cli(
        "wandb", f"+rollouts_jsonl_fpath={run.rollouts}", "+wandb_mode=offline", "--json"
    )
    assert exported.exit_code == 0, exported.output
    result = json.loads(exported.stdout)
    stored = read_offline_run(wandb_python, Path(result["details"]["run_dir"]))
    assert stored["run"]["project"] == "ether0"
    flat = flatten_metrics(run.read_aggregate_metrics())
    assert len(flat.metrics) == 20
    for name, value in flat.values.items():
        assert stored["summary"][name] == value, name
    assert os.environ["WANDB_DIR"] in result["details"]["run_dir"]
