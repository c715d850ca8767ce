"""Two exports of one run at once from two machines (#65): two copies of a run directory, two
``EVALEXPORT_CACHE_DIR``s (two CI jobs, two users: they share no lock), one real ``mlflow
server``, traces on, one of them stopped at a random moment in a random way. Whoever starts
first and whatever is killed when, once each has been run again the experiment holds one
finished run of the data and each rollout's trace once, and nothing was deleted (it held no
active run and 100 orphaned traces, or 228 traces for 128 rollouts)."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.exporters.test_mlflow_reruns import STATE, _mlflow
from tests.faults.conftest import FaultLab

pytestmark = [pytest.mark.downloads, pytest.mark.faults]

STOPS = ["none", "sigterm-first", "sigkill-first-worker", "sigkill-second", "sigint-second"]
"""How one of the two is stopped: not at all; the first export by SIGTERM (Slurm); its worker
by SIGKILL (the OOM killer); the second export by SIGKILL (a lost machine: its worker stops
itself); the second by Ctrl-C."""


CREATE_EXPERIMENT = (
    "import sys\nfrom mlflow import MlflowClient\n"
    "MlflowClient(sys.argv[1]).create_experiment(sys.argv[2])\nprint('{}')\n"
)


def _cache_of_its_own(shared: Path, root: Path) -> Path:
    """A cache directory that shares the built environments (building MLflow's again would
    take minutes) and nothing else: its locks are its own, as another machine's are."""
    root.mkdir()
    for name in ("envs", "virtualenv-app-data"):
        if (shared / name).exists():
            (root / name).symlink_to(shared / name)
    return root


def _start_machine(
    lab: FaultLab, uri: str, experiment: str, rollouts: Path, cache: Path, tmpdir: Path
) -> subprocess.Popen[str]:
    """An export with traces as one machine runs it: its cache directory and its TMPDIR."""
    tmpdir.mkdir(exist_ok=True)
    return lab.start(
        "mlflow",
        f"+rollouts_jsonl_fpath={rollouts}",
        f"+mlflow_tracking_uri={uri}",
        f"+mlflow_experiment_name={experiment}",
        "+traces=true",
        "--json",
        prefix=["env", f"EVALEXPORT_CACHE_DIR={cache}", f"TMPDIR={tmpdir}"],
    )


def _workers_under(tmpdir: Path) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if str(tmpdir).encode() in command and b"evalexport_worker_runner" in command:
            pids.append(int(entry.name))
    return pids


@pytest.mark.parametrize("stop", STOPS)
def test_two_machines_exporting_one_run_at_once_leave_one_run_and_each_trace_once(
    stop, lab: FaultLab, mlflow_server, mlflow_python, make_sample_run, tmp_path
) -> None:
    chance = random.Random()
    seed = chance.randrange(1 << 30)
    chance.seed(seed)
    said = f"(stop {stop}, seed {seed})"
    sample = make_sample_run("copy-a", tasks=8, repeats=8)
    copy = tmp_path / "copy-b"
    shutil.copytree(sample.run.run_dir, copy)
    experiment = f"two-machines-{stop}-{sample.canaries.suffix}"
    shared = Path(os.environ["EVALEXPORT_CACHE_DIR"])
    machines = {
        "first": (sample.rollouts, shared, lab.tmpdir / "first"),
        "second": (
            copy / sample.rollouts.name,
            _cache_of_its_own(shared, tmp_path / "cache-b"),
            lab.tmpdir / "second",
        ),
    }

    def start(name: str) -> subprocess.Popen[str]:
        return _start_machine(lab, mlflow_server.url, experiment, *machines[name])

    first = start("first")
    time.sleep(chance.uniform(0, 2))
    second = start("second")
    if stop != "none":
        time.sleep(chance.uniform(0.5, 8))
        victim = first if "first" in stop else second
        if stop == "sigkill-first-worker":
            for pid in _workers_under(machines["first"][2]):
                os.kill(pid, signal.SIGKILL)
        else:
            number = {"sigterm": signal.SIGTERM, "sigkill": signal.SIGKILL, "sigint": signal.SIGINT}
            victim.send_signal(number[stop.split("-")[0]])
    ended = {"first": lab.end(first, timeout=600), "second": lab.end(second, timeout=600)}
    for name, end in ended.items():
        assert "Traceback" not in end.output, f"{name} {said}: {end.output[-3000:]}"
    # Each is run again, as its CI job's retry would: every rerun succeeds or skips.
    for name in ("first", "second"):
        again = lab.end(start(name), timeout=600)
        result = again.result()
        assert again.exit_code == 0, f"{name} rerun {said}: {result['message']}"
        assert result["status"] in ("succeeded", "skipped"), result["message"]
    state = _mlflow(mlflow_python, STATE, mlflow_server.url, experiment)
    active = {run_id: run for run_id, run in state["runs"].items() if run["stage"] == "active"}
    assert len(active) == 1, f"{said}: {state['runs']}"
    assert [run["stage"] for run in state["runs"].values()] == ["active"], said  # none deleted
    ((run_id, run),) = active.items()
    assert run["status"] == "FINISHED", said
    assert run["linked"] == state["traces"] == sample.rollout_count, f"{said}: {state}"
    assert state["twice"] == [], said
    assert state["unrewarded"] == 0, said
    for rollouts, _, _ in machines.values():
        (marker,) = rollouts.parent.glob("*_mlflow_export_done")
        assert run_id in marker.read_text(), said


def test_an_export_stalled_past_its_lease_wakes_to_find_it_lost_and_writes_no_more(
    lab: FaultLab, mlflow_server, mlflow_python, make_sample_run, tmp_path, monkeypatch
) -> None:
    """A stalled export (its worker stopped, as Ctrl-Z, a paused VM or a partition stop it)
    whose lease another machine's export saw lapse and took over: when it wakes it finds its
    lease lost (it was not renewed for half the lease's time), fails saying so and writes
    nothing more, neither a trace nor the lease; the run ends with each trace once (the
    hostile review of #65: the woken export renewed the lease over the other's and logged 156
    traces twice, 412 for 256 rollouts)."""
    monkeypatch.setenv("EVALEXPORT_LEASE_SECONDS", "10")
    sample = make_sample_run("stalled", tasks=16, repeats=16)
    copy = tmp_path / "copy"
    shutil.copytree(sample.run.run_dir, copy)
    experiment = f"stalled-{sample.canaries.suffix}"
    shared = Path(os.environ["EVALEXPORT_CACHE_DIR"])
    other_cache = _cache_of_its_own(shared, tmp_path / "cache-b")

    def start(rollouts: Path, cache: Path, tmpdir: Path) -> subprocess.Popen[str]:
        return _start_machine(lab, mlflow_server.url, experiment, rollouts, cache, tmpdir)

    # made before the export, so that the traces can be counted from the start
    _mlflow(mlflow_python, CREATE_EXPERIMENT, mlflow_server.url, experiment)
    first = start(sample.rollouts, shared, lab.tmpdir / "first")
    deadline = time.monotonic() + 300
    while True:  # stop its worker once it has logged some of the traces, not all
        traces = _mlflow(mlflow_python, STATE, mlflow_server.url, experiment)["traces"]
        if traces > 0 or first.poll() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    workers = _workers_under(lab.tmpdir / "first")
    assert workers, "the first export's worker ended before it could be stopped"
    assert first.poll() is None
    for pid in workers:
        os.kill(pid, signal.SIGSTOP)
    try:
        stopped_at = _mlflow(mlflow_python, STATE, mlflow_server.url, experiment)["traces"]
        assert 0 < stopped_at < sample.rollout_count
        second = lab.end(start(copy / sample.rollouts.name, other_cache, lab.tmpdir / "b"), 600)
    finally:
        for pid in workers:
            os.kill(pid, signal.SIGCONT)
    ended = lab.end(first, timeout=600)
    took_over = second.result()
    assert second.exit_code == 0, took_over
    assert "resumed and finished" in took_over["message"], took_over
    woke = ended.result()
    assert ended.exit_code == 1, woke
    assert "lease on the run lapsed" in woke["message"], woke["message"]
    state = _mlflow(mlflow_python, STATE, mlflow_server.url, experiment)
    ((run_id, run),) = state["runs"].items()
    assert run["stage"] == "active", state
    assert run["status"] == "FINISHED", state
    assert run["linked"] == state["traces"] == sample.rollout_count, state
    assert state["twice"] == [], state
    assert run_id in took_over["run_id"]
