"""An online W&B export asks the project for runs of this run's data before it writes one
(``backends/wandb/worker.py``): the run of the data's own id (derived from the fingerprint and
the project) is resumed where an earlier export left it unfinished, waited for while another
export writes it, and a run anybody else wrote to is left as it is; nothing is ever deleted.
No W&B server runs here, so the body's lookup is driven with a stand-in of ``wandb.Api`` that
answers as the public API does (runs with ``id``, ``state``, ``json_config`` and ``summary``,
filtered by tag); the call's names are held to the real SDK's by the wandb manifests
(``contracts/wandb``)."""

from __future__ import annotations

import json
import sys
import types
from typing import Any, ClassVar

import pytest

from evalexport.backends.wandb import worker as wandb_worker

TAG = "evalexport-0123456789abcdef"
OURS = wandb_worker.run_id_of("sha256:0123456789abcdef", "team", "aime24")


class _Run:
    def __init__(self, run_id: str, state: str, config: Any = None, summary: Any = None) -> None:
        self.id, self.state = run_id, state
        self.json_config = json.dumps(config or {"model": {"value": "m"}})
        self.summary = summary or {"mean/reward": 0.5, "_step": 0}

    def delete(self, delete_artifacts: bool = False) -> None:
        _Api.deleted.append(self.id)


class _Api:
    asked: ClassVar[list[tuple[str, Any]]] = []
    deleted: ClassVar[list[str]] = []
    answers: ClassVar[list[list[_Run]]] = []
    """What each ``runs`` call answers, in turn (the last again when they run out)."""

    def __init__(self, timeout: int | None = None) -> None:
        self.timeout = timeout

    def runs(self, path: str, filters: Any = None) -> list[_Run]:
        _Api.asked.append((path, filters))
        return _Api.answers.pop(0) if len(_Api.answers) > 1 else _Api.answers[0]


@pytest.fixture
def wandb_api(monkeypatch: pytest.MonkeyPatch) -> type[_Api]:
    _Api.asked, _Api.deleted = [], []
    _Api.answers = [[_Run("r-finished", "finished")]]
    monkeypatch.setitem(sys.modules, "wandb", types.SimpleNamespace(Api=_Api))
    monkeypatch.setattr(wandb_worker, "_POLL", 0.01)
    return _Api


def _payload(**changes: Any) -> Any:
    return {
        "project": "aime24",
        "entity": "team",
        "mode": "online",
        "dir": "/nonexistent",
        "tags": ["evalexport", TAG],
        "config": {"model": "m"},
        "summary": {"mean/reward": 0.5},
        "table_key": "Rollouts",
        "samples_key": "Samples",
        "dry_run": False,
        "skip_existing": False,
        "second_copy": False,
        "run_id": OURS,
        "wait_seconds": 5.0,
        **changes,
    }


def test_the_run_id_is_the_datas_and_the_projects() -> None:
    """Every export of one run's data to one project names the same run, on any machine;
    another project or other data names another."""
    assert wandb_worker.run_id_of("sha256:0123456789abcdef", "team", "aime24") == OURS
    assert wandb_worker.run_id_of("sha256:0123456789abcdef", "team", "other") != OURS
    assert wandb_worker.run_id_of("sha256:ffff", "team", "aime24") != OURS
    assert len(OURS) <= 64
    assert OURS.isalnum()


def test_with_no_run_of_the_data_the_export_writes_the_datas_own_run(wandb_api) -> None:
    wandb_api.answers = [[]]
    chosen, ended = wandb_worker._looked_up(_payload())
    assert ended is None
    assert chosen is not None
    assert (chosen.run_id, chosen.resumed, chosen.existing) == (OURS, False, [])
    assert wandb_api.asked == [("team/aime24", {"tags": {"$in": [TAG]}})]


@pytest.mark.parametrize("state", ["failed", "crashed", "killed"])
def test_an_unfinished_export_of_the_data_is_resumed_not_deleted(wandb_api, state) -> None:
    """An interrupted or failed online export (W&B marks its run failed, or crashed when it
    stops hearing from it): the rerun continues that run under its id (it deleted it)."""
    wandb_api.answers = [[_Run(OURS, state)]]
    chosen, ended = wandb_worker._looked_up(_payload())
    assert ended is None
    assert chosen is not None
    assert (chosen.run_id, chosen.resumed) == (OURS, True)
    assert chosen.logged == {"mean/reward", "_step"}
    assert f"resumed W&B run {OURS}" in chosen.notices[0]
    assert wandb_api.deleted == []


def test_a_run_somebody_else_wrote_to_is_left_as_it_is(wandb_api) -> None:
    """A run of the data's id with a summary value the export never logs (a user's own), or a
    run of another id carrying the tag: never touched; the export writes a run of the next id."""
    wandb_api.answers = [
        [
            _Run(OURS, "crashed", summary={"my_own_score": 1.0}),
            _Run("theirs", "failed"),
        ]
    ]
    chosen, ended = wandb_worker._looked_up(_payload())
    assert ended is None
    assert chosen is not None
    assert (chosen.run_id, chosen.resumed) == (f"{OURS}-2", False)
    assert chosen.notices == [
        "W&B run theirs (failed) of this run's data is left as it is: its id is not one an "
        "export of this data gives",
        f"W&B run {OURS} (crashed) of this run's data is left as it is: its summary key "
        "'my_own_score' is not one this export logs",
    ]
    assert wandb_api.deleted == []


def test_a_finished_run_of_the_data_is_skipped_for_unless_a_second_copy_is_asked(
    wandb_api,
) -> None:
    """The project holds this data's run: the export skips for it (the marker records it),
    whatever its id (an earlier evalexport's); ``second_copy`` writes ``<id>-2``."""
    wandb_api.answers = [[_Run("older-random-id", "finished")]]
    chosen, ended = wandb_worker._looked_up(_payload())
    assert chosen is None
    assert ended is not None
    assert (ended["status"], ended["skip_reason"], ended["run_id"]) == (
        "skipped",
        "found at target",
        "older-random-id",
    )
    wandb_api.answers = [[_Run(OURS, "finished")]]
    chosen, ended = wandb_worker._looked_up(_payload(second_copy=True))
    assert ended is None
    assert chosen is not None
    assert (chosen.run_id, chosen.existing) == (f"{OURS}-2", [OURS])
    assert "exporting a second copy, as +second_copy asks" in chosen.notices[-1]


def test_a_finished_run_somebody_wrote_to_is_not_this_datas_run(wandb_api) -> None:
    wandb_api.answers = [[_Run(OURS, "finished", summary={"my_own_score": 1.0})]]
    chosen, ended = wandb_worker._looked_up(_payload())
    assert ended is None
    assert chosen is not None
    assert chosen.run_id == f"{OURS}-2"
    assert "its summary key 'my_own_score' is not one this export logs" in chosen.notices[0]


def test_a_run_another_export_writes_is_waited_for_then_skipped(wandb_api) -> None:
    """Two exports of one run at once: the second waits while the first's run is running,
    saying so, and skips once it has finished (it would have written the run twice)."""
    wandb_api.answers = [[_Run(OURS, "running")], [_Run(OURS, "running")], [_Run(OURS, "finished")]]
    said: list[str] = []
    chosen, ended = wandb_worker._looked_up(_payload(), said.append)
    assert chosen is None
    assert ended is not None
    assert (ended["status"], ended["skip_reason"], ended["run_id"]) == (
        "skipped",
        "found at target",
        OURS,
    )
    assert said == [
        f"waiting for W&B run {OURS} of this run's data, which another export is writing"
    ]


def test_a_run_another_export_writes_is_skipped_with_skip_existing(wandb_api) -> None:
    wandb_api.answers = [[_Run(OURS, "running")]]
    _chosen, ended = wandb_worker._looked_up(_payload(skip_existing=True))
    assert ended is not None
    assert (ended["status"], ended["skip_reason"]) == ("skipped", "in progress at target")


def test_waiting_ends_at_the_wait_limit_with_a_failure_naming_the_run(wandb_api) -> None:
    wandb_api.answers = [[_Run(OURS, "running")]]
    _chosen, ended = wandb_worker._looked_up(_payload(wait_seconds=0.05))
    assert ended is not None
    assert ended["status"] == "failed"
    assert f"gave up waiting for W&B run {OURS}" in ended["message"]


def test_a_dry_run_says_what_the_export_would_do_and_changes_nothing(wandb_api) -> None:
    wandb_api.answers = [[_Run(OURS, "crashed")]]
    _chosen, ended = wandb_worker._looked_up(_payload(dry_run=True))
    assert ended is not None
    assert ended["status"] == "succeeded"
    assert "existing_run_ids" not in ended
    assert ended["notices"] == [
        f"the export would resume W&B run {OURS}, which an earlier export of this run's data "
        "left crashed"
    ]
    assert wandb_api.deleted == []


def test_offline_there_is_no_one_to_ask(wandb_api, tmp_path) -> None:
    (tmp_path / "wandb" / f"offline-run-20261207_010203-{OURS}").mkdir(parents=True)
    chosen, ended = wandb_worker._looked_up(
        _payload(mode="offline", skip_existing=True, dir=str(tmp_path))
    )
    assert ended is None
    assert chosen is not None
    assert chosen.run_id == OURS
    assert "an earlier offline export of this run's data is in" in chosen.notices[0]
    assert wandb_api.asked == []


def test_the_lookup_uses_the_entity_the_key_has_when_none_is_given(wandb_api) -> None:
    wandb_worker._looked_up(_payload(entity=None))
    assert wandb_api.asked[0][0] == "aime24"


def test_the_worker_deletes_nothing() -> None:
    assert not [path for path in wandb_worker.SURFACE["paths"] if "delete" in path]
