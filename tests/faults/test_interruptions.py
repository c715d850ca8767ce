"""Stop signals and killed processes during a real MLflow export (issue #13, SPEC §3.4).

The export goes to a real ``mlflow server`` through a loopback proxy that holds the first
``log-batch`` request: the remote run exists and the worker is waiting on the server, the
worst moment to be stopped. Then a real signal is sent to a real process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from evalexport.backends.mlflow.exporter import FINGERPRINT_TAG
from evalexport.guard import run_fingerprint
from tests.faults.conftest import FaultLab, as_from_a_terminal, run_files
from tests.support.mlflow_server import read_runs
from tests.support.proxy import FailingProxy

# The fault-injection tests of real MLflow exports take minutes: --with_faults (CI) runs them.
pytestmark = [pytest.mark.downloads, pytest.mark.faults]


@pytest.fixture
def experiment(request: pytest.FixtureRequest) -> str:
    """An experiment of this test's own on the session's server (its runs are the only ones)."""
    return f"{request.node.originalname}-{os.urandom(4).hex()}"


def _runs_of(mlflow_python, server, experiment, sample) -> dict[str, list[str]]:
    """This run's remote runs (by fingerprint), by status."""
    fingerprint = run_fingerprint(sample.run)
    by_status: dict[str, list[str]] = {}
    for run in read_runs(mlflow_python, server.url, experiment):
        if run["tags"].get(FINGERPRINT_TAG) == fingerprint:
            by_status.setdefault(run["status"], []).append(run["run_id"])
    return by_status


def _export_args(sample, uri: str, experiment: str) -> list[str]:
    return [
        "mlflow",
        f"+rollouts_jsonl_fpath={sample.rollouts}",
        f"+mlflow_tracking_uri={uri}",
        f"+mlflow_experiment_name={experiment}",
        "--json",
    ]


def _held_export(lab: FaultLab, sample, server, experiment: str, password: str = ""):
    """Start an export whose first log-batch the proxy holds; return (process, proxy)."""
    proxy = FailingProxy(server.port, trigger=b"/runs/log-batch", hold=True)
    uri = proxy.url if not password else proxy.url.replace("://", f"://evx:{password}@")
    process = lab.start(*_export_args(sample, uri, experiment))
    if not proxy.tripped.wait(timeout=180):
        process.kill()
        raise AssertionError(f"the export never reached log-batch: {lab.end(process).output}")
    return process, proxy


@pytest.mark.parametrize(
    ("signum", "exit_code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)]
)
def test_a_stop_signal_ends_the_remote_run_as_killed_and_writes_nothing(
    lab: FaultLab, mlflow_server, mlflow_python, sample_run, experiment, signum, exit_code
) -> None:
    lab.watched.append(mlflow_server.root)
    before = run_files(sample_run)
    process, proxy = _held_export(lab, sample_run, mlflow_server, experiment)
    try:
        process.send_signal(signum)
        ended = lab.end(process)
    finally:
        proxy.close()
    assert ended.exit_code == exit_code, ended.output
    result = ended.result()
    assert result["status"] == "failed"
    assert result["exit_code"] == exit_code
    assert f"Interrupted by {signal.Signals(signum).name}" in str(result["message"])
    assert "is marked KILLED" in str(result["message"])
    lab.assert_left_clean(sample_run, before, ended)
    assert list(_runs_of(mlflow_python, mlflow_server, experiment, sample_run)) == ["KILLED"]

    rerun = lab.run(*_export_args(sample_run, mlflow_server.url, experiment))
    assert rerun.exit_code == 0, rerun.output
    assert str(rerun.result()["message"]).startswith("resumed and finished MLflow run")
    runs = _runs_of(mlflow_python, mlflow_server, experiment, sample_run)
    assert list(runs) == ["FINISHED"]  # the killed run is resumed: one run of the data
    assert len(runs["FINISHED"]) == 1


def test_a_killed_parent_leaves_no_worker_no_scratch_and_no_password_on_disk(
    lab: FaultLab, mlflow_server, mlflow_python, sample_run, experiment
) -> None:
    password = "canarypassword" + os.urandom(6).hex()
    lab.extra_secrets.append(password)
    lab.watched.append(mlflow_server.root)
    before = run_files(sample_run)
    process, proxy = _held_export(lab, sample_run, mlflow_server, experiment, password)
    try:
        assert lab.worker_pids(), "the worker should be running"
        process.kill()  # SIGKILL: the parent can clean up nothing
        ended = lab.end(process)
        lab.wait_until_no_worker()
    finally:
        proxy.close()
    assert ended.exit_code == -signal.SIGKILL
    lab.assert_left_clean(sample_run, before, ended)
    assert list(_runs_of(mlflow_python, mlflow_server, experiment, sample_run)) == ["KILLED"]

    rerun = lab.run(*_export_args(sample_run, mlflow_server.url, experiment))
    assert rerun.exit_code == 0, rerun.output
    runs = _runs_of(mlflow_python, mlflow_server, experiment, sample_run)
    assert list(runs) == ["FINISHED"]
    assert len(runs["FINISHED"]) == 1


def test_a_worker_killed_outright_is_reported_and_the_rerun_ends_its_abandoned_run(
    lab: FaultLab, mlflow_server, mlflow_python, sample_run, experiment
) -> None:
    lab.watched.append(mlflow_server.root)
    before = run_files(sample_run)
    process, proxy = _held_export(lab, sample_run, mlflow_server, experiment)
    try:
        os.kill(lab.wait_for_worker(), signal.SIGKILL)  # as the OOM killer does
        ended = lab.end(process)
    finally:
        proxy.close()
    assert ended.exit_code == 1
    assert "The mlflow worker was killed by SIGKILL without writing a result" in ended.stdout
    lab.assert_left_clean(sample_run, before, ended)
    assert list(_runs_of(mlflow_python, mlflow_server, experiment, sample_run)) == ["RUNNING"]

    rerun = lab.run(*_export_args(sample_run, mlflow_server.url, experiment))
    assert rerun.exit_code == 0, rerun.output
    assert str(rerun.result()["message"]).startswith("resumed and finished MLflow run")
    runs = _runs_of(mlflow_python, mlflow_server, experiment, sample_run)
    assert list(runs) == ["FINISHED"]  # the abandoned run is resumed: one run of the data
    assert len(runs["FINISHED"]) == 1


def test_a_worker_past_its_time_limit_is_stopped_and_its_run_marked_killed(
    lab: FaultLab, mlflow_server, mlflow_python, sample_run, experiment, monkeypatch
) -> None:
    monkeypatch.setenv("EVALEXPORT_WORKER_TIME_LIMIT", "15")
    before = run_files(sample_run)
    process, proxy = _held_export(lab, sample_run, mlflow_server, experiment)
    try:
        ended = lab.end(process)
    finally:
        proxy.close()
    assert ended.exit_code == 1
    message = str(ended.result()["message"])
    assert "exceeded its time limit of 15 s and was stopped" in message
    assert "is marked KILLED" in message
    lab.assert_left_clean(sample_run, before, ended)


def test_ctrl_c_during_an_atif_export_of_a_large_file_leaves_no_output(
    lab: FaultLab, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run("big", tasks=150, repeats=4)  # past the process pool's threshold
    before = run_files(sample)
    output = tmp_path / "atif-out"
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "evalexport", "atif"),
            f"+rollouts_jsonl_fpath={sample.rollouts}",
            f"+output_dirpath={output}",
            "+agent_version=1.0",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, as a terminal's foreground job
        preexec_fn=as_from_a_terminal,
    )
    # Wait until the staging directory exists: conversion is under way.
    staging = None
    for _ in range(600):
        staging = next(tmp_path.glob(".atif-out.partial-*"), None)
        if staging is not None or process.poll() is not None:
            break
        subprocess.run(["sleep", "0.05"], check=True)
    assert staging is not None, "the export finished before it could be interrupted"
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group gets it
    ended = lab.end(process)
    assert ended.exit_code == 130, ended.output
    assert "Traceback" not in ended.output
    assert not output.exists()
    assert list(tmp_path.glob(".atif-out.partial-*")) == []
    assert run_files(sample) == before


def _pool_processes(lab: FaultLab) -> list[int]:
    """This test's ``plan run`` export processes (they inherit our per-test ``$TMPDIR``)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes()
            environment = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"evalexport.plans.pool_worker" in command and str(lab.tmpdir).encode() in environment:
            found.append(int(entry.name))
    return found


def test_a_stopped_plan_stops_the_export_under_way_and_starts_no_other(
    lab: FaultLab, mlflow_server, mlflow_python, make_sample_run, tmp_path
) -> None:
    benchmarks = ["aime24", "gpqa", "math500"]
    samples = [
        make_sample_run(f"job/{name}", benchmark=name, seed=i) for i, name in enumerate(benchmarks)
    ]
    befores = [run_files(sample) for sample in samples]
    proxy = FailingProxy(mlflow_server.port, trigger=b"/runs/log-batch", hold=True)
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        yaml.safe_dump(
            {
                "job": {"benchmarks": benchmarks, "runs_root": str(tmp_path / "job")},
                "exports": {
                    "mlflow": {"mlflow_tracking_uri": proxy.url, "mlflow_experiment_name": "plan"}
                },
            }
        )
    )
    process = lab.start("plan", "run", str(plan), "--workers", "1", "--json")
    try:
        assert proxy.tripped.wait(timeout=180), "the first export never reached log-batch"
        assert len(_pool_processes(lab)) == 1
        process.send_signal(signal.SIGTERM)
        ended = lab.end(process)
    finally:
        proxy.close()
    assert ended.exit_code == 143, ended.output
    first, *rest = (task["result"] for task in json.loads(ended.stdout))
    assert first["exit_code"] == 143
    assert "is marked KILLED" in first["message"]
    for result in rest:
        assert result["exit_code"] == 143
        assert result["message"] == "not started: the plan was interrupted by SIGTERM"
    assert _pool_processes(lab) == []
    for sample, before in zip(samples, befores, strict=True):
        lab.assert_left_clean(sample, before, ended)
    assert list(_runs_of(mlflow_python, mlflow_server, "plan", samples[0])) == ["KILLED"]
    for sample in samples[1:]:
        assert _runs_of(mlflow_python, mlflow_server, "plan", sample) == {}


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == str(pid) and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _command(pid: int) -> bytes:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def _alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def test_sigkill_of_a_large_atif_export_ends_its_pool_and_a_rerun_clears_its_staging(
    lab: FaultLab, tmp_path
) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        from atif_export import write_rollouts
    finally:
        sys.path.pop(0)
    rollouts = tmp_path / "big" / "big_rollouts.jsonl"
    rollouts.parent.mkdir()
    write_rollouts(rollouts, 12 * 1024 * 1024, "tool-agent")  # past the pool's threshold
    output = tmp_path / "out" / "atif"
    args = [
        "atif",
        f"+rollouts_jsonl_fpath={rollouts}",
        f"+output_dirpath={output}",
        "+agent_version=1",
    ]
    process = lab.start(*args)
    deadline = time.monotonic() + 60
    pool: list[int] = []
    while time.monotonic() < deadline and len(pool) < 2:  # the pool's two processes
        pool = [pid for pid in _children_of(process.pid) if b"reaper" not in _command(pid)]
        time.sleep(0.05)
    staging = sorted((tmp_path / "out").glob(".atif.partial-*"))
    assert staging, "the export should be converting into its staging directory"
    process.kill()
    lab.end(process)
    deadline = time.monotonic() + 10
    while _alive(pool) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive(pool) == [], "the pool's processes outlived their parent"
    assert all(path.exists() for path in staging)  # nothing could remove it then
    rerun = lab.run(*args, timeout=600)
    assert rerun.exit_code == 0, rerun.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["atif"]


def test_sigkill_before_the_worker_gets_its_payload_leaves_no_scratch(
    lab: FaultLab, mlflow_python, make_sample_run
) -> None:
    """Killed while it reads a large run, the worker started early and waiting: the reaper
    ends the worker and removes the scratch (the worker's, the rollouts table's)."""
    sample = make_sample_run(tasks=60, repeats=16)  # a run that takes a moment to read
    before = run_files(sample)
    process = lab.start("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}")
    lab.wait_for_worker()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(lab.tmpdir.glob("evalexport-rollouts-*")):
        time.sleep(0.01)
    process.kill()
    ended = lab.end(process)
    deadline = time.monotonic() + 30
    while list(lab.tmpdir.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    lab.assert_left_clean(sample, before, ended)
