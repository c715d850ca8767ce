"""The mlflow exporter against the real MLflow SDK: a real ``mlflow server`` on 127.0.0.1 and
the embedded SQLite default (SPEC §3.6). Building the MLflow environment needs the index."""

from __future__ import annotations

import datetime
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from evalexport.backends.mlflow.exporter import FINGERPRINT_TAG, MLflowConfig, MLflowExporter
from evalexport.backends.mlflow.names import flatten_params, sanitize_name, sanitize_names
from evalexport.guard import run_fingerprint
from evalexport.metrics import flatten_metrics
from evalexport.pipeline import export_run
from evalexport.reading import prepare
from evalexport.results import ExportStatus
from evalexport.spec.options import parse_options
from tests.support.mlflow_server import read_runs, run_mlflow_script
from tests.support.proxy import FailingProxy

pytestmark = pytest.mark.downloads


def test_the_session_environment_is_the_one_the_exporter_builds() -> None:
    from tests.conftest import MLFLOW_REQUIREMENT

    assert MLflowConfig.model_fields["requirement"].default == MLFLOW_REQUIREMENT


def _export(sample, **options):
    exporter = MLflowExporter()
    config = parse_options(exporter, {"rollouts_jsonl_fpath": str(sample.rollouts), **options})
    return export_run(exporter, sample.run, config)


def test_metrics_params_tags_and_artifacts_read_back_as_the_run_holds_them(
    mlflow_server, mlflow_python, sample_run, tmp_path
) -> None:
    result = _export(
        sample_run, mlflow_tracking_uri=mlflow_server.url, mlflow_experiment_name="aime24-e2e"
    )
    assert result.status is ExportStatus.SUCCEEDED, result.message
    (run,) = read_runs(
        mlflow_python, mlflow_server.url, "aime24-e2e", ("global_config.json", tmp_path / "dl")
    )
    assert run["run_id"] == result.run_id
    assert run["status"] == "FINISHED"

    flat = flatten_metrics(sample_run.run.read_aggregate_metrics())
    names = sanitize_names(flat.metrics, "metric").names
    assert run["metrics"] == {names[name]: value for name, value in flat.metrics.items()}
    assert "aime24_math_tool_agent/pass_at_1_avg-of-4_/no_answer" in run["metrics"]
    assert (
        "aime24_math_tool_agent/pass_at_1_avg-of-4_/no_answer/std_dev_across_runs" in run["metrics"]
    )
    assert (
        run["metrics"]["key_metrics/aime24_math_simple_agent/pass_at_1_avg-of-4_/symbolic_accuracy"]
        == flat.metrics["key_metrics/aime24_math_simple_agent/pass@1[avg-of-4]/symbolic_accuracy"]
    )
    assert run["params"] == {
        sanitize_name(name): value
        for name, value in flatten_params(sample_run.run.read_saved_config()).items()
    }
    assert run["params"]["policy_api_key"] == "****"
    assert run["params"]["env_1_"] == "HF_HOME=/data/hf"
    assert run["params"]["max_tokens"] == "16384"
    assert run["tags"][FINGERPRINT_TAG] == run_fingerprint(sample_run.run)
    assert run["tags"]["aime24_math_simple_agent/judge_model"] == "none (symbolic grading)"
    assert run["artifacts"] == [
        "aime24_rollouts_aggregate_metrics.json",
        "global_config.json",
        "rollouts.json",
        "samples.json",
    ]
    assert json.loads(Path(run["downloaded"]).read_text()) == sample_run.run.read_saved_config()
    assert sample_run.canaries.found_in_tree(mlflow_server.root) == []


def test_rollouts_json_is_gyms_table_one_row_per_rollout_without_its_trajectory(
    mlflow_server, mlflow_python, sample_run, tmp_path
) -> None:
    _export(sample_run, mlflow_tracking_uri=mlflow_server.url, mlflow_experiment_name="table")
    (run,) = read_runs(
        mlflow_python, mlflow_server.url, "table", ("rollouts.json", tmp_path / "dl")
    )
    table = json.loads(Path(run["downloaded"]).read_text())
    assert table["columns"] == ["Rollout"]
    assert len(table["data"]) == sample_run.rollout_count
    first = json.loads(sample_run.rollouts.read_text().splitlines()[0])
    row = json.loads(table["data"][0][0])
    assert "ng_trajectory" not in row
    assert row == {key: value for key, value in first.items() if key != "ng_trajectory"}


def test_upload_rollouts_false_leaves_the_table_out(
    mlflow_server, mlflow_python, sample_run
) -> None:
    _export(
        sample_run,
        mlflow_tracking_uri=mlflow_server.url,
        mlflow_experiment_name="no-table",
        upload_rollouts=False,
    )
    (run,) = read_runs(mlflow_python, mlflow_server.url, "no-table")
    assert "rollouts.json" not in run["artifacts"]


def test_a_second_export_is_skipped_and_creates_no_run(
    mlflow_server, mlflow_python, sample_run, cli
) -> None:
    args = (
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+mlflow_tracking_uri={mlflow_server.url}",
        "+mlflow_experiment_name=twice",
    )
    assert cli(*args).exit_code == 0
    second = cli(*args)
    assert second.exit_code == 0
    assert second.stdout.startswith(
        "skipped (already exported): aime24_rollouts.jsonl was exported to http://127.0.0.1:"
    )
    assert "unless +second_copy=true asks for another copy)" in second.stdout
    assert len(read_runs(mlflow_python, mlflow_server.url, "twice")) == 1


def test_a_run_changed_after_export_fails_naming_the_marker(
    mlflow_server, mlflow_python, sample_run
) -> None:
    _export(sample_run, mlflow_tracking_uri=mlflow_server.url, mlflow_experiment_name="changed")
    with sample_run.rollouts.open("a") as handle:
        handle.write(sample_run.rollouts.read_text().splitlines()[0] + "\n")
    result = _export(
        sample_run, mlflow_tracking_uri=mlflow_server.url, mlflow_experiment_name="changed"
    )
    assert result.exit_code == 1
    assert "The run changed since it was exported to mlflow" in result.message
    assert str(sample_run.run.export_marker("mlflow")) in result.message
    assert len(read_runs(mlflow_python, mlflow_server.url, "changed")) == 1


@pytest.mark.faults  # a server of its own, killed mid-export and started again
def test_a_server_that_fails_mid_export_gives_failed_and_no_marker_and_a_rerun_succeeds(
    own_mlflow_server, mlflow_python, sample_run, monkeypatch
) -> None:
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
    proxy = FailingProxy(
        own_mlflow_server.port, trigger=b"/runs/log-batch", on_trigger=own_mlflow_server.kill
    )
    try:
        result = _export(sample_run, mlflow_tracking_uri=proxy.url, mlflow_experiment_name="flaky")
    finally:
        proxy.close()
    assert proxy.tripped.is_set()
    assert result.status is ExportStatus.FAILED
    assert result.message.startswith(f"MLflow export to {proxy.url} failed")
    assert not sample_run.run.export_marker("mlflow").exists()

    own_mlflow_server.start()
    retried = _export(
        sample_run, mlflow_tracking_uri=own_mlflow_server.url, mlflow_experiment_name="flaky"
    )
    assert retried.status is ExportStatus.SUCCEEDED, retried.message
    assert sample_run.run.export_marker("mlflow").exists()
    finished = [
        run
        for run in read_runs(mlflow_python, own_mlflow_server.url, "flaky")
        if run["status"] == "FINISHED"
    ]
    assert [run["run_id"] for run in finished] == [retried.run_id]


def test_two_concurrent_exports_create_one_run(mlflow_server, mlflow_python, sample_run) -> None:
    command = [
        sys.executable,
        "-m",
        "evalexport",
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+mlflow_tracking_uri={mlflow_server.url}",
        "+mlflow_experiment_name=concurrent",
        "--json",
    ]
    processes = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    results = [json.loads(process.communicate(timeout=600)[0]) for process in processes]
    assert sorted(result["status"] for result in results) == ["skipped", "succeeded"]
    assert len(read_runs(mlflow_python, mlflow_server.url, "concurrent")) == 1


def test_the_token_reaches_the_server_and_nothing_else(mlflow_server, sample_run, cli) -> None:
    token = "canary-mlflow-token-5f3a9c1e77d2"
    proxy = FailingProxy(mlflow_server.port)
    try:
        run = cli(
            "mlflow",
            f"+rollouts_jsonl_fpath={sample_run.rollouts}",
            f"+mlflow_tracking_uri={proxy.url}",
            f"+mlflow_tracking_token={token}",
            "+mlflow_experiment_name=token",
            "--json",
        )
    finally:
        proxy.close()
    assert run.exit_code == 0, run.output
    assert f"Bearer {token}".encode() in bytes(proxy.seen)
    assert token not in run.output
    assert token not in sample_run.run.export_marker("mlflow").read_text()


GYM_LIVE_RUN = r"""
import sys
from mlflow import MlflowClient
client = MlflowClient(sys.argv[1])
experiment = client.get_experiment_by_name(sys.argv[2])
experiment_id = experiment.experiment_id if experiment else client.create_experiment(sys.argv[2])
run = client.create_run(experiment_id, run_name=sys.argv[3])
client.set_terminated(run.info.run_id, "FINISHED")
print(run.info.run_id)
"""
"""What NeMo Gym's live MLflow exporter leaves of an evaluation at the server (``setup``: a run
of the config's ``mlflow_run_name`` in its experiment; ``teardown``: finished), and nothing
beside the run. ``tests/exporters/test_gym_runs.py`` runs Gym's own exporter."""


def _logged_live(sample, python: Path, uri: str, experiment: str, name: str) -> str:
    """Log ``sample`` live as Gym does (a run ``name`` in ``experiment``), its saved config
    naming where, as the config Gym ran with does; the live run's id."""
    from evalexport.masking import save_run_config

    made = run_mlflow_script(python, GYM_LIVE_RUN, uri, experiment, name)
    config = sample.run.read_saved_config()
    config.update(mlflow_tracking_uri=uri, mlflow_experiment_name=experiment, mlflow_run_name=name)
    sample.run.saved_config.unlink()
    save_run_config(config, sample.rollouts)
    return made.split()[-1]


def test_a_run_gym_also_logged_live_is_named_and_exported_as_a_second_run(
    mlflow_server, mlflow_python, sample_run
) -> None:
    """Gym 0.7.0 records nothing of its live run beside the rollouts; the run's config names
    the experiment and the run name Gym logged to, and the export finds the run there (it
    read only a ``<stem>_mlflow_live_run.json`` that no Gym writes, so it never said so)."""
    live = _logged_live(sample_run, mlflow_python, mlflow_server.url, "live-evals", "aime-1")
    options = {"mlflow_tracking_uri": mlflow_server.url, "mlflow_experiment_name": "exports"}
    planned = _export(sample_run, dry_run=True, **options)
    assert planned.status is ExportStatus.SUCCEEDED, planned.message
    said = (
        f"the evaluation also logged this run live, as MLflow run {live} ('aime-1' in "
        "experiment 'live-evals', as its config says); the export would make a second run of it"
    )
    assert said in planned.notices
    result = _export(sample_run, **options)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert result.details["live_run_id"] == live
    assert said.replace("the export would make", "this export is") in result.notices
    (run,) = read_runs(mlflow_python, mlflow_server.url, "exports")
    assert run["tags"]["evalexport.live_run_id"] == live


def test_a_live_run_record_is_still_read_and_called_deprecated(
    mlflow_server, mlflow_python, sample_run, caplog
) -> None:
    sample_run.run.live_run_record("mlflow").write_text(json.dumps({"run_id": "live0123456789"}))
    with caplog.at_level("WARNING"):
        result = _export(
            sample_run, mlflow_tracking_uri=mlflow_server.url, mlflow_experiment_name="live"
        )
    assert result.status is ExportStatus.SUCCEEDED
    assert result.details["live_run_id"] == "live0123456789"
    (said,) = [r.getMessage() for r in caplog.records if "live0123456789" in r.getMessage()]
    assert "also logged live as MLflow run live0123456789" in said
    assert "deprecated" in said
    (run,) = read_runs(mlflow_python, mlflow_server.url, "live")
    assert run["tags"]["evalexport.live_run_id"] == "live0123456789"


def test_the_embedded_default_writes_an_sqlite_store_in_the_current_directory(
    mlflow_python, sample_run, cli
) -> None:
    run = cli("mlflow", f"+rollouts_jsonl_fpath={sample_run.rollouts}")
    assert run.exit_code == 0, run.output
    database = Path.cwd() / "mlruns.db"
    assert database.is_file()
    (stored,) = read_runs(mlflow_python, f"sqlite:///{database}", "aime24")
    assert stored["run_name"] == f"aime24-{sample_run.run.run_dir.name}"
    assert (
        "aime24_math_simple_agent/pass_at_1_avg-of-4_/no_answer/std_dev_across_runs"
        in stored["metrics"]
    )
    assert stored["artifacts"] == [
        "aime24_rollouts_aggregate_metrics.json",
        "global_config.json",
        "rollouts.json",
        "samples.json",
    ]
    assert (Path.cwd() / "mlartifacts").is_dir()


def test_no_canary_secret_reaches_mlflow_or_the_output(mlflow_server, sample_run, cli) -> None:
    run = cli(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+mlflow_tracking_uri={mlflow_server.url}",
        "--json",
    )
    assert run.exit_code == 0
    assert sample_run.canaries.found_in(run.output) == []
    assert sample_run.canaries.found_in_tree(mlflow_server.root) == []


@pytest.mark.mlflow_sdk
def test_an_mlflow_2_pin_without_sqlalchemys_is_told_the_requirement_that_exports(
    sample_run, cli, tmp_path, use_sdk_env_cache
) -> None:
    """``+requirement=mlflow==2.22.1`` alone installs SQLAlchemy 2.1, which MLflow 2 cannot
    import (it said only "ImportError: cannot import name 'FallbackAsyncAdaptedQueuePool'");
    the failure names the requirement that works, and that requirement, as written, exports."""
    database = f"+mlflow_tracking_uri=sqlite:///{tmp_path / 'mlflow2.db'}"
    failed = cli(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        database,
        "+requirement=mlflow==2.22.1",
        "--json",
    )
    assert failed.exit_code == 1, failed.output
    message = json.loads(failed.stdout)["message"]
    said = "MLflow 2.22.1 does not run with SQLAlchemy 2.1"
    assert said in message, message
    (advised,) = shlex.split(message.split("pin it beside MLflow, ", 1)[1])
    assert advised == "+requirement=[mlflow==2.22.1,sqlalchemy<2.1]"
    exported = cli("mlflow", f"+rollouts_jsonl_fpath={sample_run.rollouts}", database, advised)
    assert exported.exit_code == 0, exported.output


@pytest.mark.mlflow_sdk
def test_an_mlflow_2_pin_exports_the_same_run(sample_run, cli, tmp_path, use_sdk_env_cache) -> None:
    database = tmp_path / "mlflow2.db"
    run = cli(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        "+requirement=[mlflow==2.22.1,sqlalchemy<2.1]",
        f"+mlflow_tracking_uri=sqlite:///{database}",
        "--json",
    )
    assert run.exit_code == 0, run.output
    result = json.loads(run.stdout)
    assert "mlflow-py" in result["environment"]
    python = Path(result["environment"]) / "bin" / "python"
    version = subprocess.run(
        [python, "-c", "import mlflow; print(mlflow.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.startswith("2.")
    (stored,) = read_runs(python, f"sqlite:///{database}", "aime24")
    assert len(stored["metrics"]) == 24


def test_the_worker_reports_its_progress_to_the_end(mlflow_server, sample_run) -> None:
    seen: list[tuple[int, int]] = []
    exporter = MLflowExporter(progress=lambda done, total: seen.append((done, total)))
    config = parse_options(
        exporter,
        {
            "rollouts_jsonl_fpath": str(sample_run.rollouts),
            "mlflow_tracking_uri": mlflow_server.url,
            "mlflow_experiment_name": "progress",
        },
    )
    assert export_run(exporter, sample_run.run, config).status is ExportStatus.SUCCEEDED
    assert seen[0][0] == 0
    assert seen[-1][0] == seen[-1][1] > 2
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def _copy_without_marker(sample, destination: Path):
    """A copy of the run directory as a user makes one: every file but the export markers."""
    import shutil

    from evalexport.run import RunArtifacts

    shutil.copytree(sample.run.run_dir, destination, ignore=shutil.ignore_patterns("*_export_done"))
    return RunArtifacts.from_rollouts_path(destination / sample.rollouts.name)


def test_a_run_tried_on_the_local_store_first_still_reaches_the_server(
    mlflow_server, mlflow_python, sample_run, tmp_path
) -> None:
    local = f"sqlite:///{tmp_path / 'mlruns.db'}"
    options = {"mlflow_experiment_name": "local-then-team"}
    assert _export(sample_run, mlflow_tracking_uri=local, **options).status is (
        ExportStatus.SUCCEEDED
    )
    team = _export(sample_run, mlflow_tracking_uri=mlflow_server.url, **options)
    assert team.status is ExportStatus.SUCCEEDED, team.message
    assert len(read_runs(mlflow_python, mlflow_server.url, "local-then-team")) == 1
    again = _export(sample_run, mlflow_tracking_uri=mlflow_server.url, **options)
    assert again.status is ExportStatus.SKIPPED
    assert f"was exported to {mlflow_server.url} as run {team.run_id}" in again.message


@pytest.mark.long
def test_a_copy_exported_to_the_same_server_is_skipped_for_or_a_second_copy_when_asked(
    mlflow_server, mlflow_python, sample_run, tmp_path
) -> None:
    """A copy of the run directory (the same bytes) exported to a server that holds the
    original's run is skipped for, the marker written: the experiment holds the run once. A
    second copy is made only when asked (``+second_copy=true``), and said."""
    options = {"mlflow_tracking_uri": mlflow_server.url, "mlflow_experiment_name": "copies"}
    first = _export(sample_run, **options)
    assert first.status is ExportStatus.SUCCEEDED, first.message
    copy = _copy_without_marker(sample_run, tmp_path / "copy")
    exporter = MLflowExporter()

    def export_copy(**extra):
        config = parse_options(
            exporter, {"rollouts_jsonl_fpath": str(copy.rollouts), **options, **extra}
        )
        return export_run(exporter, copy, config)

    dry = export_copy(dry_run=True)
    assert (dry.status, dry.skip_reason) == (ExportStatus.SKIPPED, "found at target")
    assert first.run_id in dry.message
    skipped = export_copy()
    assert (skipped.status, skipped.run_id) == (ExportStatus.SKIPPED, first.run_id)
    assert "second_copy=true exports another copy" in skipped.message
    assert len(read_runs(mlflow_python, mlflow_server.url, "copies")) == 1
    # The target holds the run's data: the skip is marked, as an export is.
    (marker,) = copy.run_dir.glob("*_mlflow_export_done")
    assert first.run_id in marker.read_text()
    marker.unlink()  # as the marker's message says, to export again
    dry = export_copy(dry_run=True, second_copy=True)
    assert dry.status is ExportStatus.SUCCEEDED
    assert f"already holds run {first.run_id}" in dry.message
    assert "would add a second copy, as" in dry.message
    assert "second_copy asks" in dry.message
    second = export_copy(second_copy=True)
    assert second.status is ExportStatus.SUCCEEDED
    assert second.existing_run_ids == [first.run_id]
    # The result says it, as the dry run did: the line a user reads and --json alike.
    assert f"already holds run {first.run_id}" in second.message
    assert len(read_runs(mlflow_python, mlflow_server.url, "copies")) == 2


def test_a_dry_run_with_a_marker_says_the_export_would_skip(mlflow_server, sample_run) -> None:
    # The session's server: a new embedded store would add MLflow's migrations to the test.
    options = {"mlflow_tracking_uri": mlflow_server.url, "mlflow_experiment_name": "marked"}
    assert _export(sample_run, **options).status is ExportStatus.SUCCEEDED
    dry = _export(sample_run, dry_run=True, **options)
    real = _export(sample_run, **options)
    assert (dry.status, dry.skip_reason) == (real.status, real.skip_reason)
    assert dry.status is ExportStatus.SKIPPED
    assert dry.message.startswith("dry run: the export would be skipped:")


def test_a_dry_run_against_a_dead_server_fails_as_the_export_would(
    mlflow_python, sample_run
) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    options = {
        "mlflow_tracking_uri": f"http://127.0.0.1:{port}",
        "mlflow_request_retries": 0,
        "mlflow_request_timeout": 2,
    }
    dry = _export(sample_run, dry_run=True, **options)
    real = _export(sample_run, **options)
    assert (dry.status, real.status) == (ExportStatus.FAILED, ExportStatus.FAILED)
    assert dry.message.startswith("dry run: the export would fail:")
    for said in (dry.message, real.message):  # in the user's terms, not urllib3's retry trace
        assert "the tracking server cannot be reached (connection refused)" in said
        assert "evalexport envs run mlflow mlflow server" in said
        assert "Max retries" not in said


def test_a_dry_run_makes_no_store_where_there_is_none(mlflow_python, sample_run, tmp_path) -> None:
    store = tmp_path / "fresh.db"
    dry = _export(sample_run, dry_run=True, mlflow_tracking_uri=f"sqlite:///{store}")
    assert dry.status is ExportStatus.SUCCEEDED, dry.message
    assert not store.exists()


def test_a_dry_run_of_traces_asks_this_mlflow_without_making_the_store_or_writing_home(
    mlflow_python, sample_run, tmp_path, evalexport_isolation, monkeypatch
) -> None:
    """+traces=true needs MLflow 3: a dry run asks the worker even where the store is not made
    yet (the MLflow 2 test below shows it asked), and the worker answers without opening the
    store or writing MLflow's telemetry id into the home."""
    for variable in ("PYTEST_CURRENT_TEST", "CI", "GITHUB_ACTIONS"):  # which turn MLflow's off
        monkeypatch.delenv(variable, raising=False)
    store = tmp_path / "fresh.db"
    dry = _export(sample_run, dry_run=True, traces=True, mlflow_tracking_uri=f"sqlite:///{store}")
    assert dry.status is ExportStatus.SUCCEEDED, dry.message
    assert not store.exists()
    assert [p for p in (evalexport_isolation / "home").rglob("*") if p.is_file()] == []


@pytest.mark.mlflow_sdk
def test_a_dry_run_of_traces_on_an_mlflow_2_pin_fails_as_the_export_does(
    sample_run, tmp_path, use_sdk_env_cache
) -> None:
    store = tmp_path / "fresh.db"
    options = {
        "traces": True,
        # The MLflow 2 test's environment, shared through the session's SDK cache.
        "requirement": ["mlflow==2.22.1", "sqlalchemy<2.1"],
        "mlflow_tracking_uri": f"sqlite:///{store}",
    }
    export = _export(sample_run, **options)  # builds the environment the dry run then asks
    dry = _export(sample_run, dry_run=True, **options)
    assert (
        (dry.status, dry.exit_code)
        == (export.status, export.exit_code)
        == (
            ExportStatus.FAILED,
            export.exit_code,
        )
    )
    assert "+traces=true needs MLflow 3 or later" in export.message
    assert dry.message.startswith("dry run: the export would fail: ")
    assert "+traces=true needs MLflow 3 or later" in dry.message
    assert not store.exists()


def test_every_experiment_of_a_new_embedded_store_keeps_its_artifacts_beside_it(
    mlflow_python, sample_run, tmp_path
) -> None:
    store = tmp_path / "store" / "mlruns.db"
    store.parent.mkdir()
    uri = f"sqlite:///{store}"
    assert _export(sample_run, mlflow_tracking_uri=uri).status is ExportStatus.SUCCEEDED
    script = (
        "import json, sys\n"
        "from mlflow.tracking import MlflowClient\n"
        "client = MlflowClient(tracking_uri=sys.argv[1])\n"
        "print(json.dumps({e.name: e.artifact_location for e in client.search_experiments()}))\n"
    )
    listed = run_mlflow_script(mlflow_python, script, uri)
    locations = json.loads(listed.splitlines()[-1])
    assert set(locations) == {"Default", "aime24"}
    for name, location in locations.items():
        assert location.removeprefix("file://").startswith(str(store.parent)), (name, location)


def _load_samples_as_the_guide_says(uri: str, run_id: str) -> str:
    """docs/exporters/mlflow.md's ``load_table`` block, for this store and run, and what it
    read."""
    import re

    guide = (Path(__file__).resolve().parents[2] / "docs" / "exporters" / "mlflow.md").read_text()
    (block,) = re.findall(
        r"<!-- tested: tests/exporters/test_mlflow.py -->\n```python\n(.*?)```", guide, re.S
    )
    block = block.replace('"sqlite:///mlruns.db", "RUN_ID"', f"{uri!r}, {run_id!r}")
    return block + (
        "import json\n"
        "print(json.dumps({'columns': list(samples.columns), "
        "'kinds': {name: kind.kind for name, kind in samples.dtypes.items()}, "
        "'rows': len(samples), 'best_reward': float(best['reward'].iloc[0])}))\n"
    )


def test_the_run_has_the_evaluations_times_and_the_exports_in_a_tag(
    mlflow_server, mlflow_python, sample_run
) -> None:
    options = {"mlflow_tracking_uri": mlflow_server.url, "mlflow_experiment_name": "times"}
    result = _export(sample_run, **options)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    (run,) = read_runs(mlflow_python, mlflow_server.url, "times")
    times = prepare(sample_run.run).evaluation
    assert times.source == "the rollouts' own timestamps"
    assert (run["start_time"], run["end_time"]) == (times.started_at_ms, times.ended_at_ms)
    assert run["tags"]["evalexport.evaluation.started_at"].startswith("2026-08-26T")
    exported = datetime.datetime.fromisoformat(run["tags"]["evalexport.exported_at"])
    assert abs(exported - datetime.datetime.now(datetime.UTC)) < datetime.timedelta(minutes=10)


def test_load_table_reads_the_samples_table_with_a_numeric_reward(
    mlflow_server, mlflow_python, sample_run
) -> None:
    result = _export(sample_run, mlflow_tracking_uri=mlflow_server.url)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    script = _load_samples_as_the_guide_says(mlflow_server.url, str(result.run_id))
    loaded = subprocess.run(  # with the MLflow the export used, as the guide says
        [sys.executable, "-m", "evalexport", "envs", "run", "mlflow", "python", "-c", script],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    table = json.loads(loaded.stdout.splitlines()[-1])
    assert table["columns"][:4] == ["task_index", "rollout_index", "agent", "reward"]
    # Numbers, so the table sorts by them (pandas reads 1.0 and 0.0 as integers).
    assert table["kinds"]["reward"] in {"f", "i"}
    assert table["kinds"]["task_index"] == "i"
    assert table["rows"] == sample_run.rollout_count
    assert table["best_reward"] == 1.0


def test_mlflows_own_variables_steer_an_export_given_no_option(
    mlflow_server, mlflow_python, sample_run, monkeypatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.url)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "from-the-environment")
    result = _export(sample_run)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert (
        result.details["settings"]["mlflow_tracking_uri"]
        == "MLFLOW_TRACKING_URI from the environment"
    )
    assert [
        r["run_id"] for r in read_runs(mlflow_python, mlflow_server.url, "from-the-environment")
    ] == [result.run_id]
    assert not (Path.cwd() / "mlruns.db").exists()


def test_an_option_beats_mlflows_variables(
    mlflow_server, mlflow_python, sample_run, monkeypatch, tmp_path
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "beaten-by-the-option")
    result = _export(
        sample_run, mlflow_tracking_uri=mlflow_server.url, mlflow_experiment_name="from-the-option"
    )
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert result.details["settings"]["mlflow_experiment_name"] == "+mlflow_experiment_name"
    assert len(read_runs(mlflow_python, mlflow_server.url, "from-the-option")) == 1
    assert read_runs(mlflow_python, mlflow_server.url, "beaten-by-the-option") == []


GUARANTEE_FIXTURES = ("mlflow_python",)
"""What serves MLflow to the guarantee suite (tests/exporters/test_guarantees.py)."""


def guarantee_options(tmp_path: Path) -> dict[str, object]:
    """What the guarantee suite exports with (tests/exporters/test_guarantees.py)."""
    return {"mlflow_tracking_uri": f"sqlite:///{tmp_path / 'mlruns.db'}"}


def test_rows_no_one_expects_export_whole(mlflow_server, mlflow_python, make_sample_run, tmp_path):
    """A timestamp past the year 9999, a lone surrogate, a task index given as text (#46)."""
    from evalexport.testing.guarantees import write_odd_rows

    sample = make_sample_run("odd", agents=("aime24_math_tool_agent",))
    write_odd_rows(sample.rollouts)
    result = _export(sample, mlflow_tracking_uri=mlflow_server.url, mlflow_experiment_name="odd")
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert "1 rollout timestamp past the year 9999" in result.message
    (run,) = read_runs(mlflow_python, mlflow_server.url, "odd", ("rollouts.json", tmp_path / "dl"))
    table = json.loads(Path(run["downloaded"]).read_text(encoding="utf-8"))
    assert json.loads(table["data"][0][0])["grader_note"] == "unpaired \ud800 surrogate"
    assert run["tags"]["evalexport.evaluation.ended_at"].startswith("20")
