"""Which run an MLflow export writes into (docs/reliability.md, "Nothing lost"), decided by the
worker's own code (``_Choice``) over an experiment held in memory: the fast twin of
``test_mlflow_reruns.py``, which makes the same states on a real ``mlflow server`` (its slower
cases run under ``--with_faults``). A run an earlier export left unfinished is resumed; a run
anyone else wrote to, or no lease names, is left as it is and a new run made, saying why; a
run another export holds is waited for, skipped for with ``+skip_existing``, or resumed once
its lease lapses. Nothing is deleted: the client here has no delete call to make."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from evalexport.backends.mlflow import worker

FINGERPRINT = "evalexport.fingerprint"
NAME = "aime24-2026-08-26"


class Experiment:
    """An MLflow experiment's runs and tags, and the client calls the worker makes on them
    (``MlflowClient``'s names and arguments); every write is recorded."""

    def __init__(self) -> None:
        self.runs: dict[str, SimpleNamespace] = {}
        self.tags: dict[str, str] = {}
        self.writes: list[tuple[str, str]] = []
        self.searches = 0
        self.on_search: Any = None
        self.racing: str | None = None
        """A claim another export inserts at the same moment as this one's first."""

    def add(self, status: str, *, tags: dict[str, str], metrics: dict[str, float]) -> str:
        run_id = f"run{len(self.runs)}"
        self.runs[run_id] = SimpleNamespace(
            info=SimpleNamespace(run_id=run_id, status=status, lifecycle_stage="active"),
            data=SimpleNamespace(tags=dict(tags), params={}, metrics=dict(metrics)),
        )
        return run_id

    def search_runs(self, experiment_ids: list[str], filter_string: str, max_results: int) -> list:
        self.searches += 1
        if self.on_search is not None:
            self.on_search(self.searches)
        value = filter_string.split(" = ")[1].strip("'")
        return [run for run in self.runs.values() if run.data.tags.get(FINGERPRINT) == value]

    def get_run(self, run_id: str) -> SimpleNamespace:
        return self.runs[run_id]

    def create_run(
        self, experiment_id: str, start_time: int, run_name: str, tags: dict[str, str]
    ) -> SimpleNamespace:
        run_id = self.add("RUNNING", tags={**tags, "mlflow.runName": run_name}, metrics={})
        self.writes.append(("create_run", run_id))
        return self.runs[run_id]

    def set_tag(self, run_id: str, key: str, value: str) -> None:
        self.writes.append(("set_tag", run_id))
        self.runs[run_id].data.tags[key] = value

    def update_run(self, run_id: str, status: str) -> None:
        self.writes.append(("update_run", run_id))
        self.runs[run_id].info.status = status

    def set_terminated(self, run_id: str, status: str, end_time: int | None = None) -> None:
        self.writes.append(("set_terminated", run_id))
        self.runs[run_id].info.status = status

    def get_experiment(self, experiment_id: str) -> SimpleNamespace:
        return SimpleNamespace(tags=dict(self.tags))

    def set_experiment_tag(self, experiment_id: str, key: str, value: str) -> None:
        if key not in self.tags and self.racing is not None:
            self.tags[key], self.racing = self.racing, None  # another export's insert won
            raise RuntimeError("UNIQUE constraint failed: experiment_tags.key")
        self.tags[key] = value

    def written(self, run_id: str) -> list[str]:
        return [call for call, written in self.writes if written == run_id]


def _payload(**options: Any) -> dict[str, Any]:
    return {
        "tracking_uri": "http://127.0.0.1:5000",
        "experiment_name": "aime24",
        "run_name": NAME,
        "fingerprint_tag": FINGERPRINT,
        "run_tags": {FINGERPRINT: "f00d", "evalexport.benchmark": "aime24"},
        "batches": [{"params": {}, "metrics": {"reward": 0.5}, "tags": {}}],
        "lease_seconds": 30.0,
        "skip_existing": False,
        "second_copy": False,
        "store_directory": None,
        "start_time_ms": 0,
        **options,
    }


def _lease(status: str, **more: Any) -> str:
    lease = {
        "export": "earlier",
        "created_by": "earlier",
        "host": worker._HOST,
        "place": worker._PLACE,
        "pid": _dead_pid(),
        "status": status,
        "beat": 3,
        "name": NAME,
        **more,
    }
    return json.dumps(lease)


def _dead_pid() -> int:
    pid = 4_000_000
    while _alive(pid):
        pid += 1
    return pid


def _alive(pid: int) -> bool:
    from pathlib import Path

    return Path(f"/proc/{pid}").exists()


def _exported(experiment: Experiment, status: str, lease: str, **metrics: float) -> str:
    """A run of this data as an export leaves it: its tags, its metric, its lease."""
    return experiment.add(
        status,
        tags={
            **_payload()["run_tags"],
            "mlflow.runName": NAME,
            worker.LEASE_TAG: lease,
        },
        metrics={"reward": 0.5, **metrics},
    )


@pytest.fixture
def choose(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``choose(experiment, **payload options)``: the worker's choice, and what it said while
    it chose; the claim and the polls take milliseconds here, not seconds."""
    monkeypatch.setattr(worker, "_CLAIM_WAIT", 0.001)
    monkeypatch.setattr(worker, "_POLL", 0.01)
    leases: list[Any] = []

    def run(experiment: Experiment, **options: Any) -> tuple[Any, list[str]]:
        payload = _payload(**options)
        said: list[str] = []
        lease = worker._Lease(experiment, payload)  # type: ignore[arg-type]
        leases.append(lease)
        choice = worker._Choice(experiment, "1", payload, lease, said.append)  # type: ignore[arg-type]
        return choice.choose(time.monotonic() + 10), said

    yield run
    for lease in leases:
        lease.end_renewing()


@pytest.mark.parametrize("left", ["KILLED", "FAILED", "RUNNING"])
def test_an_unfinished_export_is_resumed(choose, left: str) -> None:
    """Stopped (``KILLED``), failed (``FAILED``) or killed outright on this machine
    (``RUNNING``, its process gone): the rerun takes the run over, nothing else made."""
    experiment = Experiment()
    earlier = _exported(experiment, left, _lease(left))
    chosen, _ = choose(experiment)
    assert isinstance(chosen, worker._Chosen), chosen
    assert (chosen.run_id, chosen.resumed) == (earlier, True)
    assert any(
        f"resumed MLflow run {earlier}, which an earlier export" in n for n in chosen.notices
    )
    assert [call for call, _ in experiment.writes].count("create_run") == 0
    assert experiment.runs[earlier].info.status == "RUNNING"
    assert json.loads(experiment.runs[earlier].data.tags[worker.LEASE_TAG])["status"] == "RUNNING"


def test_a_run_a_user_reopened_is_left_as_it_was_and_a_new_run_made(choose) -> None:
    experiment = Experiment()
    reopened = _exported(experiment, "FAILED", _lease("FINISHED"), my_own_score=0.5)
    chosen, _ = choose(experiment)
    assert isinstance(chosen, worker._Chosen), chosen
    assert chosen.run_id != reopened
    assert not chosen.resumed
    said = (
        f"MLflow run {reopened} (FAILED) of this run's data is left as it is: its metric "
        "'my_own_score' is not one this export logs"
    )
    assert said in chosen.notices
    assert experiment.written(reopened) == []


def test_skip_existing_skips_for_a_run_a_user_has_reopened(choose) -> None:
    experiment = Experiment()
    reopened = _exported(experiment, "FAILED", _lease("FINISHED"), my_own_score=0.5)
    ended, _ = choose(experiment, skip_existing=True)
    assert (ended["status"], ended["skip_reason"], ended["run_id"]) == (
        "skipped",
        "found at target",
        reopened,
    )
    assert experiment.writes == []


def test_a_run_no_lease_names_is_never_touched(choose) -> None:
    """A user's own run carrying the fingerprint tag, or one an evalexport before 0.5 left."""
    experiment = Experiment()
    theirs = experiment.add(
        "FAILED", tags={FINGERPRINT: "f00d", "mlflow.runName": "mine"}, metrics={}
    )
    chosen, _ = choose(experiment)
    assert isinstance(chosen, worker._Chosen), chosen
    assert chosen.run_id != theirs
    assert any(
        f"MLflow run {theirs} (FAILED) of this run's data is left as it is: it carries no" in n
        for n in chosen.notices
    )
    assert experiment.written(theirs) == []


def _held_elsewhere() -> str:
    return _lease(
        "RUNNING", host="build-42.cluster", place="build-42.cluster/boot/pid", pid=4242,
        export="elsewhere",
    )  # fmt: skip


def test_a_run_another_machine_holds_is_skipped_with_skip_existing(choose) -> None:
    experiment = Experiment()
    held = _exported(experiment, "RUNNING", _held_elsewhere())
    ended, _ = choose(experiment, skip_existing=True)
    assert (ended["status"], ended["skip_reason"], ended["run_id"]) == (
        "skipped",
        "in progress at target",
        held,
    )
    assert "export elsewhere (process 4242 on build-42.cluster" in ended["message"]
    assert experiment.writes == []


def test_an_export_waits_for_another_machines_run_and_skips_once_it_is_finished(choose) -> None:
    experiment = Experiment()
    held = _exported(experiment, "RUNNING", _held_elsewhere())

    def finish_on_the_third_look(searches: int) -> None:
        if searches == 3:
            lease = json.loads(experiment.runs[held].data.tags[worker.LEASE_TAG])
            experiment.runs[held].data.tags[worker.LEASE_TAG] = json.dumps(
                {**lease, "status": "FINISHED"}
            )
            experiment.runs[held].info.status = "FINISHED"

    experiment.on_search = finish_on_the_third_look
    ended, said = choose(experiment)
    assert (ended["status"], ended["skip_reason"], ended["run_id"]) == (
        "skipped",
        "found at target",
        held,
    )
    assert said == [
        "waiting for export elsewhere (process 4242 on build-42.cluster, renewed at an unknown "
        f"time), which is exporting this run's data as MLflow run {held}"
    ]
    assert experiment.writes == []


def test_a_lease_left_unrenewed_for_its_time_is_resumed(choose) -> None:
    """Another machine died holding a run: once its lease has not changed for the lease's
    time (on this machine's clock), the export takes the run over."""
    experiment = Experiment()
    held = _exported(experiment, "RUNNING", _held_elsewhere())
    started = time.monotonic()
    chosen, said = choose(experiment, lease_seconds=0.3)
    assert isinstance(chosen, worker._Chosen), chosen
    assert (chosen.run_id, chosen.resumed) == (held, True)
    assert time.monotonic() - started >= 0.3
    assert said
    assert said[0].startswith("waiting for export elsewhere")


def test_a_finished_run_of_the_data_is_skipped_for_unless_a_second_copy_is_asked(choose) -> None:
    experiment = Experiment()
    finished = _exported(experiment, "FINISHED", _lease("FINISHED"))
    ended, _ = choose(experiment)
    assert (ended["skip_reason"], ended["run_id"]) == ("found at target", finished)
    chosen, _ = choose(experiment, second_copy=True)
    assert isinstance(chosen, worker._Chosen), chosen
    assert chosen.run_id != finished
    assert chosen.existing == [finished]
    assert experiment.written(finished) == []


def test_two_exports_claiming_a_new_experiment_at_once_do_not_fail(choose) -> None:
    """MLflow inserts a tag the experiment lacks: of two exports claiming a new experiment at
    once, the slower is refused by the store (UNIQUE constraint failed). It backs off and takes
    the claim once the other has released it (it failed the export, in a parallel plan)."""
    experiment = Experiment()
    experiment.racing = json.dumps({"export": "elsewhere", "released": True})
    chosen, _ = choose(experiment)
    assert isinstance(chosen, worker._Chosen), chosen
    assert not chosen.resumed
    assert json.loads(experiment.tags[worker.CLAIM_TAG])["export"] != "elsewhere"


def test_the_client_here_has_no_call_the_worker_does_not_declare() -> None:
    """The in-memory client stands for ``MlflowClient`` only in calls the worker declares."""
    declared = {path.rsplit(".", 1)[-1] for path in worker.SURFACE["paths"]}
    used = {
        name
        for name in vars(Experiment)
        if not name.startswith("_") and name not in {"add", "written"}
    }
    assert used <= declared, used - declared


@pytest.mark.parametrize(
    "said_by_the_sdk",
    [
        "HTTPConnectionPool(host='127.0.0.1', port=5000): Max retries exceeded with url: "
        "/api/2.0/mlflow/experiments/get-by-name (Caused by ResponseError('too many 500 error "
        "responses'))",
        "API request to endpoint /api/2.0/mlflow/experiments/get-by-name failed with error code "
        "500 != 200. Response body: ''",
    ],
)
def test_a_server_that_answers_500_is_said_to_answer_however_the_sdk_words_it(
    said_by_the_sdk: str,
) -> None:
    """urllib3 words the last retry's 500 one way, MLflow another when it is handed the last
    answer (CI met both): either is the server answering, never a server out of reach."""
    said = worker._described(Exception(said_by_the_sdk), "http://127.0.0.1:5000")
    assert said.startswith("the tracking server answered HTTP 500 (a server error) to every")
    assert "cannot be reached" not in said
