"""How NeMo Gym names a rollout: the key its health checks file a verdict under, and the id
they give it (``nemo_gym/rollout_health.py``, ``_worker``). A row without indices (58 of Gym
0.7.0's example files hold such rows) is numbered by its place among the file's rows (lines
not blank), from 0, and rollout 0."""

from __future__ import annotations

import json
from collections.abc import Mapping

__all__ = ["RolloutKey", "gym_rollout_id", "rollout_key"]

RolloutKey = tuple[object, object, object]
"""``(task index, rollout index, stage index or None)``: what a verdict line names."""


def rollout_key(record: Mapping[str, object], ordinal: int | None = None) -> RolloutKey:
    """The key a rollout's verdict is found by: its task, rollout and stage indices. A row
    without a task index is numbered as Gym's health checks number it (``_worker``): its
    ``ordinal`` among the file's rows, and rollout 0 where it has no rollout index."""
    return (
        _keyed(record.get("_ng_task_index", ordinal)),
        _keyed(record.get("_ng_rollout_index", 0 if ordinal is not None else None)),
        _keyed(record.get("stage_index")),
    )


def _keyed(value: object) -> object:
    """A list or an object (no index, but a row may hold one) by its JSON text, which keys it."""
    return json.dumps(value, sort_keys=True) if isinstance(value, list | dict) else value


def gym_rollout_id(record: Mapping[str, object], ordinal: int | None = None) -> str | None:
    """The rollout id Gym's health checks give a rollout (``rollout_health._worker``): the
    record's ``_ng_rollout_id``, else its trajectory's ``rollout_id``, else
    ``<task>-<rollout>``, a row without indices numbered by its ``ordinal``
    (:func:`rollout_key`); ``None`` where neither is known."""
    trajectory = record.get("ng_trajectory")
    own = record.get("_ng_rollout_id") or (
        trajectory.get("rollout_id") if isinstance(trajectory, dict) else None
    )
    if own:
        return str(own)
    task = record.get("_ng_task_index", ordinal)
    return None if task is None else f"{task}-{record.get('_ng_rollout_index', 0)}"
