"""Gym's rules for an ``ng_trajectory`` beyond its field types, stated once for both
statements of the schema (:mod:`.record`'s Structs and :mod:`.record_schema`'s pydantic
models): each gives the problem in Gym's words, or ``None``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

__all__ = ["identity_problem", "join_key_problem", "timing_problem"]


class _NamesACall(Protocol):
    @property
    def model_call_id(self) -> str | None: ...
    @property
    def response_id(self) -> str | None: ...
    @property
    def model_ref(self) -> object: ...


class _Timed(Protocol):
    @property
    def started_at(self) -> float | None: ...
    @property
    def completed_at(self) -> float | None: ...


def join_key_problem(reference: _NamesACall) -> str | None:
    """Why a reference to a model call names none: it needs an id, or a model and response."""
    if not reference.model_call_id and not (
        reference.model_ref is not None and reference.response_id
    ):
        return "model_call_id or both model_ref and response_id are required"
    return None


def timing_problem(call: _Timed) -> str | None:
    """Why a tool call's timing cannot be: it completed before it started."""
    if (
        call.started_at is not None
        and call.completed_at is not None
        and call.completed_at < call.started_at
    ):
        return "completed_at must not precede started_at"
    return None


def identity_problem(
    task_id: str,
    rollout_id: str,
    invocation_ids: Iterable[str],
    model_call_ids: Iterable[str | None],
    turns: Iterable[tuple[str, str, str, int]],
) -> str | None:
    """Why a trajectory's parts do not identify themselves as Gym requires, or ``None``.

    ``turns`` are ``(task_id, rollout_id, invocation_id, turn_no)`` of each turn."""
    invocations = list(invocation_ids)
    if len(invocations) != len(set(invocations)):
        return "invocation_id must be unique within a trajectory"
    calls = [call for call in model_call_ids if call]
    if len(calls) != len(set(calls)):
        return "model_call_id must be unique within a trajectory"
    keys: set[tuple[str, int]] = set()
    for turn_task, turn_rollout, invocation, number in turns:
        if turn_task != task_id or turn_rollout != rollout_id:
            return "turn identity must match the trajectory"
        if (invocation, number) in keys:
            return "turn number must be unique within an invocation"
        keys.add((invocation, number))
    return None
