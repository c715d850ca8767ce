"""A rerun resumes; nothing is deleted (#65, docs/reliability.md, "Nothing lost"). Against a
real ``mlflow server``: a run an earlier export left unfinished is resumed and gets only what
it lacks (the traces of the rollouts it misses, links and rewards it missed); a run anyone
else wrote to (a user who reopened it, their own run carrying the fingerprint, a run no lease
names) is left exactly as it was and a new run is made, the result saying why; a run another
export holds is waited for, or skipped with ``+skip_existing``. The states an export leaves are
made here by hand, as a stopped export leaves them; ``tests/faults/`` stops real exports. The
worker's choice among such runs is held fast, over an experiment in memory, by
``test_mlflow_run_choice.py``; the cases here that only repeat it on the real server (another
state to resume from, another machine's lease waited for or lapsing) run under
``--with_faults``."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from evalexport.backends.mlflow import worker as mlflow_worker
from tests.support.mlflow_server import run_mlflow_script

pytestmark = pytest.mark.downloads

LEAVE = r"""
import json, sys
from mlflow import MlflowClient
uri, store, run_id, status, place, pid, gone, unlinked, unrewarded = sys.argv[1:10]
client = MlflowClient(uri)
run = client.get_run(run_id)
lease = json.loads(run.data.tags["evalexport.lease"])
lease.update(status=status, place=place, pid=int(pid))
client.set_tag(run_id, "evalexport.lease", json.dumps(lease))
if status == "RUNNING":
    client.update_run(run_id, status="RUNNING")
else:
    client.set_terminated(run_id, status)
traces, token = [], None
while True:
    page = client.search_traces(
        experiment_ids=[run.info.experiment_id], run_id=run_id, max_results=500,
        page_token=token, include_spans=False,
    )
    traces += list(page)
    token = page.token
    if not token:
        break
traces.sort(key=lambda t: (int(t.info.tags["task_index"]), int(t.info.tags["rollout_index"])))
gone, unlinked, unrewarded = int(gone), int(unlinked), int(unrewarded)
# As if never logged, logged and not linked yet, linked without its reward feedback.
client.delete_traces(run.info.experiment_id, trace_ids=[t.info.trace_id for t in traces[:gone]])
rest = traces[gone:]
# No MLflow client unlinks a trace from a run here: the server's own database does.
import sqlite3
with sqlite3.connect(store) as database:
    database.executemany(
        "DELETE FROM entity_associations WHERE source_id = ? AND destination_id = ?",
        [(t.info.trace_id, run_id) for t in rest[:unlinked]],
    )
import mlflow
mlflow.set_tracking_uri(uri)
for trace in rest[unlinked : unlinked + unrewarded]:
    for assessment in trace.info.assessments:
        mlflow.delete_assessment(trace.info.trace_id, assessment.assessment_id)
print("null")
"""
"""Leave a finished export's run as a stopped one leaves it: its status and lease, some traces
never logged, some not linked, some without their reward (test code deletes; evalexport
never does)."""

STATE = r"""
import collections, json, sys
from mlflow import MlflowClient
client = MlflowClient(sys.argv[1])
experiment = client.get_experiment_by_name(sys.argv[2])
runs = client.search_runs([experiment.experiment_id], run_view_type=3)  # deleted ones too

def traces(**search):
    found, token = [], None
    while True:
        page = client.search_traces(
            experiment_ids=[experiment.experiment_id], max_results=500, page_token=token,
            include_spans=False, **search,
        )
        found += list(page)
        token = page.token
        if not token:
            return found

every = traces()
keys = collections.Counter(
    (t.info.tags.get("task_index"), t.info.tags.get("rollout_index")) for t in every
)
print(json.dumps({
    "runs": {
        run.info.run_id: {
            "status": run.info.status,
            "stage": run.info.lifecycle_stage,
            "metrics": sorted(run.data.metrics),
            "linked": len(traces(run_id=run.info.run_id)),
        }
        for run in runs
    },
    "traces": len(every),
    "twice": sorted(str(key) for key, count in keys.items() if count > 1),
    "unrewarded": sum(
        1 for t in every if not any(a.name == "reward" for a in t.info.assessments)
    ),
}))
"""
"""Every run of an experiment (deleted ones too), its status, metrics and linked traces; the
experiment's traces, those logged twice, those without a reward feedback."""

USER_APPENDS = r"""
import sys
import mlflow
mlflow.set_tracking_uri(sys.argv[1])
try:
    with mlflow.start_run(run_id=sys.argv[2]):
        mlflow.log_metric("my_own_score", 0.5)
        raise RuntimeError("the user's script crashed")
except RuntimeError:
    pass
print("null")
"""
"""What a user's script does to a run it reopens (``mlflow.start_run(run_id=...)``): a metric
of its own, then a crash, which leaves the run ``FAILED``."""

USERS_OWN_RUN = r"""
import json, sys
from mlflow import MlflowClient
client = MlflowClient(sys.argv[1])
experiment = client.create_experiment(sys.argv[2])
run = client.create_run(experiment, tags={"evalexport.fingerprint": sys.argv[3]})
client.log_param(run.info.run_id, "notes", "my analysis")
client.set_terminated(run.info.run_id, "FAILED")
print(json.dumps(run.info.run_id))
"""
"""A run of the user's own that carries the data's fingerprint tag (copied by hand)."""

HOLD = r"""
import json, os, sys, time
from mlflow import MlflowClient
uri, run_id, until, then = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
client = MlflowClient(uri)
lease = json.loads(client.get_run(run_id).data.tags["evalexport.lease"])
lease.update(
    status="RUNNING", host="build-42.cluster", place="build-42.cluster/boot/pid", pid=4242,
    export="elsewhere",
)
client.update_run(run_id, status="RUNNING")
beats = int(until) if until.isdigit() else 120
for beat in range(beats):
    lease["beat"] = beat
    client.set_tag(run_id, "evalexport.lease", json.dumps(lease))
    if not until.isdigit() and os.path.exists(until):
        break
    time.sleep(1)
if then == "finish":
    lease["status"] = "FINISHED"
    client.set_tag(run_id, "evalexport.lease", json.dumps(lease))
    client.set_terminated(run_id, "FINISHED")
print("null")
"""
"""Another machine's export holding a run of the data: its lease renewed every second, for
``until`` seconds or (a path) until that file exists (two minutes at most), then finished
(``finish``) or abandoned (``abandon``)."""


def _mlflow(python: Path, script: str, *arguments: object) -> Any:
    """What ``script`` prints last, as JSON, run in the MLflow environment's long-lived reader
    (mlflow imported once, not once a script)."""
    return json.loads(run_mlflow_script(python, script, *arguments).splitlines()[-1])


def _mlflow_beside(python: Path, script: str, *arguments: object) -> None:
    """Run ``script`` in a process of its own, beside the reader and the export (a holder)."""
    completed = subprocess.run(
        [str(python), "-c", script, *map(str, arguments)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]


def _export(
    cli: Any, sample: Any, uri: str, experiment: str, *more: str, traces: bool = True
) -> dict[str, Any]:
    """Export ``sample`` (a sample run, or a rollouts file's path) with traces (unless
    ``traces`` is false); its result."""
    rollouts = getattr(sample, "rollouts", sample)
    run = cli(
        "mlflow",
        f"+rollouts_jsonl_fpath={rollouts}",
        f"+mlflow_tracking_uri={uri}",
        f"+mlflow_experiment_name={experiment}",
        f"+traces={str(traces).lower()}",
        "--json",
        *more,
    )
    result: dict[str, Any] = json.loads(run.stdout)
    return result


def _forget(sample: Any) -> None:
    """Remove the export's marker, as an export that never finished leaves the run."""
    for marker in sample.run.run_dir.glob("*_export_done"):
        marker.unlink()


def _dead_pid() -> int:
    """A process id no process has now (a stopped export's)."""
    pid = 4_000_000
    while Path(f"/proc/{pid}").exists():
        pid += 1
    return pid


@pytest.mark.parametrize(
    "left",
    [
        "KILLED",
        # The same resume from the other states (the choice: test_mlflow_run_choice.py).
        pytest.param("FAILED", marks=pytest.mark.faults),
        pytest.param("RUNNING", marks=pytest.mark.faults),
    ],
)
def test_a_rerun_resumes_an_unfinished_export_and_adds_only_what_it_lacks(
    left, cli, mlflow_python, mlflow_server, make_sample_run
) -> None:
    """A stopped export (``KILLED``), a failed one (``FAILED``) or one killed outright on this
    machine (``RUNNING``, its process gone) left its run with some traces never logged, some
    logged and not linked, some without their reward: the rerun resumes that run and completes
    it, one run and each rollout's trace once, and deletes nothing (it deleted the run and its
    traces, and made another)."""
    sample = make_sample_run("unfinished", tasks=4, repeats=3)
    experiment = f"resume-{left}-{sample.canaries.suffix}"
    first = _export(cli, sample, mlflow_server.url, experiment)
    assert first["status"] == "succeeded", first["message"]
    _mlflow(
        mlflow_python, LEAVE, mlflow_server.url, mlflow_server.root / "mlflow.db",
        first["run_id"], left,
        mlflow_worker._PLACE, _dead_pid(), 4, 2, 2,
    )  # fmt: skip
    _forget(sample)

    planned = _export(cli, sample, mlflow_server.url, experiment, "--dry-run")
    assert planned["status"] == "succeeded", planned["message"]
    would = f"the export would resume MLflow run {first['run_id']}"
    assert any(would in notice for notice in planned["notices"]), planned["notices"]
    # Without +traces the run would be finished short of its traces for good (a rerun with
    # them is then skipped): refused, the run left to a rerun with them (a hostile trial).
    dry = _export(cli, sample, mlflow_server.url, experiment, "--dry-run", traces=False)
    assert dry["status"] == "failed", dry["message"]  # the dry run's verdict is the export's
    assert "Rerun with +traces=true" in dry["message"]
    without = _export(cli, sample, mlflow_server.url, experiment, traces=False)
    assert without["status"] == "failed", without["message"]
    assert f"MLflow run {first['run_id']}, which this rerun would finish" in without["message"]
    assert "Rerun with +traces=true" in without["message"]
    rerun = _export(cli, sample, mlflow_server.url, experiment)
    assert rerun["status"] == "succeeded", rerun["message"]
    assert rerun["run_id"] == first["run_id"]
    assert rerun["message"].startswith(f"resumed and finished MLflow run {first['run_id']}")
    assert rerun["details"]["traces"] == 4  # the four never logged, and no other
    there = sample.rollout_count - 4
    assert f", with 4 traces logged ({there} there already)" in rerun["message"]
    state = _mlflow(mlflow_python, STATE, mlflow_server.url, experiment)
    ((run_id, run),) = state["runs"].items()
    assert run_id == first["run_id"]
    assert (run["status"], run["stage"]) == ("FINISHED", "active")
    assert run["linked"] == state["traces"] == sample.rollout_count
    assert state["twice"] == []
    assert state["unrewarded"] == 0
    assert any(sample.run.run_dir.glob("*_mlflow_export_done"))


def test_a_copy_resumes_the_run_and_the_originals_rerun_skips_for_it(
    cli, mlflow_python, mlflow_server, make_sample_run, tmp_path
) -> None:
    """A copy of the run directory (another CI job's) resumes the run the original's stopped
    export left; the run keeps its name, so the original's rerun finds it finished, holding
    only what exports of this data write, and skips for it (it made a second run)."""
    import shutil

    sample = make_sample_run("original", tasks=2, repeats=2)
    experiment = f"copy-resumes-{sample.canaries.suffix}"
    first = _export(cli, sample, mlflow_server.url, experiment)
    _mlflow(
        mlflow_python, LEAVE, mlflow_server.url, mlflow_server.root / "mlflow.db",
        first["run_id"], "KILLED", mlflow_worker._PLACE, _dead_pid(), 1, 0, 0,
    )  # fmt: skip
    _forget(sample)
    copy = tmp_path / "elsewhere"
    shutil.copytree(sample.run.run_dir, copy)
    resumed = _export(cli, copy / sample.rollouts.name, mlflow_server.url, experiment)
    assert resumed["run_id"] == first["run_id"], resumed["message"]
    assert resumed["message"].startswith("resumed and finished")
    again = _export(cli, sample, mlflow_server.url, experiment)
    assert (again["status"], again["skip_reason"]) == ("skipped", "found at target")
    assert again["run_id"] == first["run_id"]
    state = _mlflow(mlflow_python, STATE, mlflow_server.url, experiment)
    assert list(state["runs"]) == [first["run_id"]]
    assert state["traces"] == sample.rollout_count


def test_a_run_a_user_reopened_is_left_as_it_was(
    cli, mlflow_python, mlflow_server, make_sample_run
) -> None:
    """A user appended a metric to an exported run (``mlflow.start_run(run_id=...)``) and their
    script crashed (the run is ``FAILED``), then deleted the marker as the skip message says:
    the rerun leaves that run as it is, with its traces and the user's metric, and makes a new
    run, saying why (it deleted the run, its traces and the user's metric)."""
    sample = make_sample_run("reopened", tasks=2, repeats=2)
    experiment = f"reopened-{sample.canaries.suffix}"
    first = _export(cli, sample, mlflow_server.url, experiment)
    assert first["status"] == "succeeded", first["message"]
    _mlflow(mlflow_python, USER_APPENDS, mlflow_server.url, first["run_id"])
    _forget(sample)

    rerun = _export(cli, sample, mlflow_server.url, experiment)
    assert rerun["status"] == "succeeded", rerun["message"]
    assert rerun["run_id"] != first["run_id"]
    said = (
        f"MLflow run {first['run_id']} (FAILED) of this run's data is left as it is: its metric "
        "'my_own_score' is not one this export logs"
    )
    assert said in rerun["notices"], rerun["notices"]
    state = _mlflow(mlflow_python, STATE, mlflow_server.url, experiment)
    kept = state["runs"][first["run_id"]]
    assert (kept["status"], kept["stage"]) == ("FAILED", "active")
    assert "my_own_score" in kept["metrics"]
    assert kept["linked"] == sample.rollout_count
    assert state["runs"][rerun["run_id"]]["linked"] == sample.rollout_count


def test_skip_existing_skips_for_a_run_a_user_has_reopened(
    cli, mlflow_python, mlflow_server, make_sample_run
) -> None:
    """With ``+skip_existing=true`` a finished export a user reopened (``FAILED`` after their
    script's crash) is still this data, exported: skipped, naming it (it was deleted and a
    second copy exported)."""
    sample = make_sample_run("appended", tasks=2, repeats=2)
    experiment = f"appended-{sample.canaries.suffix}"
    first = _export(cli, sample, mlflow_server.url, experiment)
    _mlflow(mlflow_python, USER_APPENDS, mlflow_server.url, first["run_id"])
    _forget(sample)
    rerun = _export(cli, sample, mlflow_server.url, experiment, "+skip_existing=true")
    assert rerun["status"] == "skipped", rerun["message"]
    assert rerun["skip_reason"] == "found at target"
    assert rerun["run_id"] == first["run_id"]
    state = _mlflow(mlflow_python, STATE, mlflow_server.url, experiment)
    assert list(state["runs"]) == [first["run_id"]]
    assert state["runs"][first["run_id"]]["status"] == "FAILED"


def test_a_users_own_run_carrying_the_fingerprint_is_never_touched(
    cli, mlflow_python, mlflow_server, make_sample_run
) -> None:
    """A run no evalexport lease names (a user's own, the fingerprint tag copied onto it; or
    one an evalexport before 0.5 left ``FAILED``) is not evalexport's unfinished work: it is
    left as it is and the export makes its own run, saying why."""
    sample = make_sample_run("theirs", tasks=2, repeats=1)
    experiment = f"theirs-{sample.canaries.suffix}"
    scratch = _export(cli, sample, mlflow_server.url, f"scratch-{experiment}")
    _forget(sample)
    theirs = _mlflow(
        mlflow_python,
        USERS_OWN_RUN,
        mlflow_server.url,
        experiment,
        scratch["details"]["fingerprint"],
    )
    result = _export(cli, sample, mlflow_server.url, experiment)
    assert result["status"] == "succeeded", result["message"]
    said = f"MLflow run {theirs} (FAILED) of this run's data is left as it is: it carries no"
    assert any(said in notice for notice in result["notices"]), result["notices"]
    state = _mlflow(mlflow_python, STATE, mlflow_server.url, experiment)
    assert state["runs"][theirs]["status"] == "FAILED"
    assert state["runs"][result["run_id"]]["status"] == "FINISHED"


@pytest.mark.faults  # seconds of waiting; the choice: test_mlflow_run_choice.py
def test_a_run_another_machines_export_holds_is_skipped_with_skip_existing(
    cli, mlflow_python, mlflow_server, make_sample_run, tmp_path
) -> None:
    """Another machine's export holds a run of the data (its lease renewed): with
    ``+skip_existing`` the export skips, naming the holder, and marks nothing (that export may
    yet fail)."""
    sample = make_sample_run("held", tasks=2, repeats=1)
    experiment = f"held-{sample.canaries.suffix}"
    first = _export(cli, sample, mlflow_server.url, experiment)
    _forget(sample)
    released = tmp_path / "released"
    holder = threading.Thread(
        target=_mlflow_beside,
        args=(mlflow_python, HOLD, mlflow_server.url, first["run_id"], released, "abandon"),
    )
    holder.start()
    try:
        _wait_for_status(mlflow_python, mlflow_server.url, experiment, "RUNNING")
        result = _export(cli, sample, mlflow_server.url, experiment, "+skip_existing=true")
    finally:
        released.touch()
        holder.join()
    assert result["status"] == "skipped", result["message"]
    assert result["skip_reason"] == "in progress at target"
    assert "export elsewhere (process 4242 on build-42.cluster" in result["message"]
    assert not any(sample.run.run_dir.glob("*_export_done"))  # it may yet fail: no marker


@pytest.mark.faults  # seconds of waiting; the choice: test_mlflow_run_choice.py
def test_an_export_waits_for_another_machines_export_and_skips_once_it_has_finished(
    cli, mlflow_python, mlflow_server, make_sample_run, caplog, tmp_path
) -> None:
    """Two exports of one run at once (two CI jobs): the second waits for the first's run,
    saying for whom, and once it is finished skips for it, marking the run exported (it
    deleted the first's run while it worked). The holder finishes only once the export has
    said it waits, so the wait is seen whatever the machine's speed."""
    sample = make_sample_run("waits", tasks=2, repeats=1)
    experiment = f"waits-{sample.canaries.suffix}"
    first = _export(cli, sample, mlflow_server.url, experiment)
    _forget(sample)
    released = tmp_path / "released"
    holder = threading.Thread(
        target=_mlflow_beside,
        args=(mlflow_python, HOLD, mlflow_server.url, first["run_id"], released, "finish"),
    )
    waiting = "mlflow: waiting for export elsewhere (process 4242 on build-42.cluster"

    def release_once_waited_for() -> None:
        deadline = time.monotonic() + 120
        while waiting not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.2)
        released.touch()

    holder.start()
    try:
        _wait_for_status(mlflow_python, mlflow_server.url, experiment, "RUNNING")
        with caplog.at_level("INFO", logger="evalexport"):
            releaser = threading.Thread(target=release_once_waited_for, daemon=True)
            releaser.start()
            result = _export(cli, sample, mlflow_server.url, experiment)
    finally:
        released.touch()
        holder.join()
    assert result["status"] == "skipped", result["message"]
    assert result["skip_reason"] == "found at target"
    assert result["run_id"] == first["run_id"]
    assert waiting in caplog.text
    assert any(sample.run.run_dir.glob("*_mlflow_export_done"))
    state = _mlflow(mlflow_python, STATE, mlflow_server.url, experiment)
    assert list(state["runs"]) == [first["run_id"]]


@pytest.mark.faults  # seconds of waiting; the choice: test_mlflow_run_choice.py
def test_a_lapsed_lease_of_another_machine_is_resumed(
    cli, mlflow_python, mlflow_server, make_sample_run, monkeypatch, caplog
) -> None:
    """A machine that died holding a run stops renewing its lease: once it has not changed for
    the lease's time (``$EVALEXPORT_LEASE_SECONDS``), the rerun resumes the run."""
    monkeypatch.setenv("EVALEXPORT_LEASE_SECONDS", "4")
    sample = make_sample_run("lapsed", tasks=2, repeats=1)
    experiment = f"lapsed-{sample.canaries.suffix}"
    first = _export(cli, sample, mlflow_server.url, experiment)
    _forget(sample)
    _mlflow(mlflow_python, HOLD, mlflow_server.url, first["run_id"], 1, "abandon")
    with caplog.at_level("INFO", logger="evalexport"):
        result = _export(cli, sample, mlflow_server.url, experiment)
    assert result["status"] == "succeeded", result["message"]
    assert result["run_id"] == first["run_id"]
    assert result["message"].startswith("resumed and finished")
    assert "waiting for export elsewhere" in caplog.text


def _wait_for_status(python: Path, uri: str, experiment: str, status: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = _mlflow(python, STATE, uri, experiment)
        if any(run["status"] == status for run in state["runs"].values()):
            return
        time.sleep(0.5)
    raise AssertionError(f"no run of {experiment} became {status}")


def test_a_live_run_is_looked_up_only_where_the_config_says_it_lives(
    cli, mlflow_python, mlflow_server, make_sample_run
) -> None:
    """The config names Gym's live run at another server: runs of that name at this target are
    somebody else's, and the export names none of them as the evaluation's live run."""
    from evalexport.masking import save_run_config

    sample = make_sample_run("elsewhere", tasks=2, repeats=1)
    experiment = f"live-elsewhere-{sample.canaries.suffix}"
    _mlflow(
        mlflow_python,
        "import sys\nfrom mlflow import MlflowClient\nc = MlflowClient(sys.argv[1])\n"
        "e = c.create_experiment(sys.argv[2])\n"
        "for _ in range(2):\n"
        "    c.set_terminated(c.create_run(e, run_name='nightly').info.run_id)\n"
        "print('null')",
        mlflow_server.url,
        "gym-live-" + sample.canaries.suffix,
    )
    config = sample.run.read_saved_config()
    config.update(
        mlflow_tracking_uri="https://mlflow.example.com/",
        mlflow_experiment_name="gym-live-" + sample.canaries.suffix,
        mlflow_run_name="nightly",
    )
    sample.run.saved_config.unlink()
    save_run_config(config, sample.rollouts)
    result = _export(cli, sample, mlflow_server.url, experiment)
    assert result["status"] == "succeeded", result["message"]
    assert "live_run_id" not in result["details"]
    assert any(
        "logged this run live to https://mlflow.example.com/" in notice
        and "not looked up here" in notice
        for notice in result["notices"]
    ), result["notices"]


def test_the_worker_deletes_nothing() -> None:
    """No path of the MLflow worker deletes: its SDK surface names no delete call."""
    assert not [path for path in mlflow_worker.SURFACE["paths"] if "delete" in path]
