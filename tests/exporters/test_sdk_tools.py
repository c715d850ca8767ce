"""The SDKs' own tools, from the environments evalexport exports with (``evalexport envs run``):
``mlflow server``/``mlflow ui`` on an exported store, ``wandb sync`` of an offline run, with
the command a W&B offline export prints. Real SDKs, real processes, real signals."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from evalexport.backends.wandb.exporter import WandbExporter
from evalexport.pipeline import export_run
from evalexport.results import ExportStatus
from evalexport.spec.options import parse_options

pytestmark = pytest.mark.downloads


def _evalexport(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalexport", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.long
def test_mlflow_server_runs_from_the_exporters_environment_on_an_exported_store(
    mlflow_python, sample_run, tmp_path
) -> None:
    store = tmp_path / "mlruns.db"
    exported = _evalexport(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+mlflow_tracking_uri=sqlite:///{store}",
        "--json",
    )
    assert exported.returncode == 0, exported.stderr
    run_id = json.loads(exported.stdout)["run_id"]
    port = _free_port()
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "evalexport", "envs", "run", "mlflow", "mlflow", "server"),
            *("--host", "127.0.0.1", "--port", str(port), "--workers", "1"),
            *("--backend-store-uri", f"sqlite:///{store}"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        # MLflow's own variable reaches the tool as the caller set it; its GenAI job runner
        # (seven more processes) would only slow this test down.
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
    )
    try:
        found = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and server.poll() is None:
            try:
                url = f"http://127.0.0.1:{port}/api/2.0/mlflow/runs/get?run_id={run_id}"
                with urllib.request.urlopen(url, timeout=5) as response:
                    found = json.load(response)
                break
            except OSError:
                time.sleep(1)
        assert found is not None, server.stdout.read().decode() if server.stdout else ""
        assert found["run"]["info"]["run_id"] == run_id
        # The tool replaced evalexport: the process started is the server, whose signal it is.
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def test_a_tool_gets_its_arguments_as_given_and_exits_with_its_own_code(mlflow_python) -> None:
    # The environment's python as the tool: every word reaches it as given, its output and
    # its exit code are the command's (MLflow's own CLI takes seconds to import; once is enough).
    arguments = ["a b", '--x="q"', "", "$HOME", "*"]
    script = "import sys; print(repr(sys.argv[1:])); sys.exit(3)"
    shown = _evalexport("envs", "run", "mlflow", "python", "-c", script, *arguments)
    assert shown.returncode == 3, shown.stderr
    assert shown.stdout.strip() == repr(arguments)
    refused = _evalexport("envs", "run", "mlflow", "mlflow", "no-such-command")
    assert refused.returncode == 2  # click's usage error, not evalexport's
    assert "No such command 'no-such-command'" in refused.stderr


def test_a_tool_the_environment_lacks_is_refused_naming_the_ones_it_has(mlflow_python) -> None:
    run = _evalexport("envs", "run", "mlflow", "wandb", "sync")
    assert run.returncode == 2
    assert "'wandb' is not a tool of mlflow-" in run.stderr
    assert "mlflow" in run.stderr.split("it has", 1)[1]


def test_an_exporter_without_an_sdk_has_no_environment_to_run() -> None:
    run = _evalexport("envs", "run", "atif", "python")
    assert run.returncode == 2
    assert "the atif exporter runs no SDK of its own" in run.stderr


def test_a_wandb_offline_export_prints_the_command_that_syncs_it(wandb_python, sample_run) -> None:
    exporter = WandbExporter()
    config = parse_options(
        exporter, {"rollouts_jsonl_fpath": str(sample_run.rollouts), "wandb_mode": "offline"}
    )
    result = export_run(exporter, sample_run.run, config)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    command = result.details["sync_command"]
    assert result.message.endswith(f"; upload it with: {command}")
    words = shlex.split(command)
    assert words[:6] == ["evalexport", "envs", "run", "wandb", "wandb", "sync"]
    assert Path(words[6]) == Path(result.details["run_dir"])
    assert (Path(words[6]) / f"run-{result.run_id}.wandb").is_file()
    # The command's tool is there: asked for its help, wandb sync answers.
    helped = _evalexport(*words[1:6], "--help")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("Usage: wandb sync ")
