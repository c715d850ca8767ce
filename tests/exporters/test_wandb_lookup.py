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


class _Api:
    asked: ClassVar[list[tuple[str, Any]]] = []

    def __init__(self, timeout: int | None = None) -> None:
        self.timeout = timeout

    def runs(self, path: str, filters: Any = None) -> list[_Run]:
        _Api.asked.append((path, filters))
        return [_Run("r-finished", "finished"), _Run("r-crashed", "crashed")]


@pytest.fixture
def wandb_api(monkeypatch: pytest.MonkeyPatch) -> type[_Api]:
    _Api.asked = []
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
    assert wandb_worker.existing_runs(wandb_api(), "team/aime24", TAG) == ["r-finished"]
    assert wandb_api.asked == [("team/aime24", {"tags": {"$in": [TAG]}})]


def test_a_copy_found_is_skipped_when_asked(wandb_api) -> None:
    existing, ended = wandb_worker._looked_up(_payload(skip_existing=True))
    assert existing == ["r-finished"]
    assert ended is not None
    assert (ended["status"], ended["skip_reason"], ended["run_id"]) == (
        "skipped",
        "found at target",
        "r-finished",
    )


def test_a_dry_run_answers_with_the_copies_and_exports_nothing(wandb_api) -> None:
    _, ended = wandb_worker._looked_up(_payload(dry_run=True))
    assert ended is not None
    assert ended["status"] == "succeeded"
    assert ended["existing_run_ids"] == ["r-finished"]
    # The dry run words the copies itself, from existing_run_ids ("would add a second copy"):
    # a notice from the worker would say them twice.
    assert "notices" not in ended


def test_an_export_goes_on_with_the_copies_named(wandb_api) -> None:
    existing, ended = wandb_worker._looked_up(_payload())
    assert (existing, ended) == (["r-finished"], None)


def test_offline_there_is_no_one_to_ask(wandb_api) -> None:
    assert wandb_worker._looked_up(_payload(mode="offline", skip_existing=True)) == ([], None)
    assert wandb_api.asked == []


def test_the_lookup_uses_the_entity_the_key_has_when_none_is_given(wandb_api) -> None:
    wandb_worker._looked_up(_payload(entity=None))
    assert wandb_api.asked[0][0] == "aime24"
