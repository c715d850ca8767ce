"""An online W&B export asks the project for runs of this run's data before it makes one
(``backends/wandb/worker.py``). No W&B server runs here, so the body's lookup is driven with a
stand-in of ``wandb.Api`` that answers as the public API does (runs with ``id`` and
``state``, filtered by tag); the call's names are held to the real SDK's by the wandb
manifests (``contracts/wandb``)."""

from __future__ import annotations

import sys
import types
from typing import Any, ClassVar

import pytest

from evalexport.backends.wandb import worker as wandb_worker

TAG = "evalexport-0123456789abcdef"


class _Run:
    def __init__(self, run_id: str, state: str) -> None:
        self.id, self.state = run_id, state

    def delete(self, delete_artifacts: bool = False) -> None:
        if self.id in _Api.undeletable:
            raise PermissionError("403 Forbidden: not an admin of this project")
        _Api.deleted.append(self.id)


class _Api:
    asked: ClassVar[list[tuple[str, Any]]] = []
    deleted: ClassVar[list[str]] = []
    undeletable: ClassVar[set[str]] = set()

    def __init__(self, timeout: int | None = None) -> None:
        self.timeout = timeout

    def runs(self, path: str, filters: Any = None) -> list[_Run]:
        _Api.asked.append((path, filters))
        return [
            _Run("r-finished", "finished"),
            _Run("r-crashed", "crashed"),
            _Run("r-failed", "failed"),
            _Run("r-running", "running"),
        ]


@pytest.fixture
def wandb_api(monkeypatch: pytest.MonkeyPatch) -> type[_Api]:
    _Api.asked, _Api.deleted, _Api.undeletable = [], [], set()
    monkeypatch.setitem(sys.modules, "wandb", types.SimpleNamespace(Api=_Api))
    return _Api


def _payload(**changes: Any) -> dict[str, Any]:
    return {
        "project": "aime24",
        "entity": "team",
        "mode": "online",
        "tags": ["evalexport", TAG],
        "dry_run": False,
        "skip_existing": False,
        **changes,
    }


def test_only_finished_runs_with_the_fingerprints_tag_are_copies(wandb_api) -> None:
    existing, _, _ = wandb_worker._looked_up(_payload())
    assert existing == ["r-finished"]
    assert wandb_api.asked == [("team/aime24", {"tags": {"$in": [TAG]}})]


def test_a_copy_found_is_skipped_when_asked(wandb_api) -> None:
    existing, _, ended = wandb_worker._looked_up(_payload(skip_existing=True))
    assert existing == ["r-finished"]
    assert ended is not None
    assert (ended["status"], ended["skip_reason"], ended["run_id"]) == (
        "skipped",
        "found at target",
        "r-finished",
    )


def test_a_dry_run_answers_with_the_copies_and_what_it_would_delete(wandb_api) -> None:
    _, _, ended = wandb_worker._looked_up(_payload(dry_run=True))
    assert ended is not None
    assert ended["status"] == "succeeded"
    assert ended["existing_run_ids"] == ["r-finished"]
    # The dry run words the copies itself, from existing_run_ids ("would add a second copy");
    # the notices say what the export would delete, and nothing is deleted.
    assert ended["notices"] == [
        f"an earlier export of this run that did not finish, W&B run r-{state} ({state}), "
        "would be deleted, so that the project holds this run once"
        for state in ("failed", "crashed")
    ]
    assert wandb_api.deleted == []


def test_an_export_deletes_the_runs_earlier_exports_did_not_finish(wandb_api) -> None:
    """After an interrupted or failed online export (W&B marks its run failed, or crashed
    when it stops hearing from it) the rerun deletes that run, so that the project holds one
    run of the data; a running one may be an export going on elsewhere and is left."""
    existing, removed, ended = wandb_worker._looked_up(_payload())
    assert (existing, ended) == (["r-finished"], None)
    assert wandb_api.deleted == ["r-failed", "r-crashed"]
    assert removed == [
        "an earlier export of this run that did not finish, W&B run r-failed (failed), was "
        "deleted, so that the project holds this run once",
        "an earlier export of this run that did not finish, W&B run r-crashed (crashed), was "
        "deleted, so that the project holds this run once",
    ]


def test_a_run_the_project_will_not_delete_is_named_and_the_export_goes_on(wandb_api) -> None:
    wandb_api.undeletable = {"r-crashed"}
    _, removed, ended = wandb_worker._looked_up(_payload())
    assert ended is None
    assert wandb_api.deleted == ["r-failed"]
    assert removed[1] == (
        "an earlier export of this run that did not finish, W&B run r-crashed (crashed), could "
        "not be deleted (403 Forbidden: not an admin of this project); delete it from the "
        "project's runs table"
    )


def test_offline_there_is_no_one_to_ask(wandb_api) -> None:
    assert wandb_worker._looked_up(_payload(mode="offline", skip_existing=True)) == ([], [], None)
    assert wandb_api.asked == []


def test_the_lookup_uses_the_entity_the_key_has_when_none_is_given(wandb_api) -> None:
    wandb_worker._looked_up(_payload(entity=None))
    assert wandb_api.asked[0][0] == "aime24"
