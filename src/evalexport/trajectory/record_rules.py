"""Gym's rules for an ``ng_trajectory`` beyond its field types, which :mod:`.record`'s Structs
check after their fields (and :mod:`.record_schema`'s pydantic models, derived from them, check
through them): each gives the problem in Gym's words, or ``None``."""

from __future__ import annotations

from collections.abc import Sequence
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


class _Invocation(Protocol):
    @property
    def invocation_id(self) -> str: ...


class _Call(Protocol):
    @property
    def model_call_id(self) -> str | None: ...


class _Turn(Protocol):
    @property
    def task_id(self) -> str: ...
    @property
    def rollout_id(self) -> str: ...
    @property
    def invocation_id(self) -> str: ...
    @property
    def turn_no(self) -> int: ...


class _Trajectory(Protocol):
    @property
    def task_id(self) -> str: ...
    @property
    def rollout_id(self) -> str: ...
    @property
    def invocations(self) -> Sequence[_Invocation]: ...
    @property
    def model_calls(self) -> Sequence[_Call]: ...
    @property
    def turns(self) -> Sequence[_Turn]: ...


def identity_problem(trajectory: _Trajectory) -> str | None:
    """Why a trajectory's parts do not identify themselves as Gym requires, or ``None``."""
    invocations = [invocation.invocation_id for invocation in trajectory.invocations]
    if len(invocations) != len(set(invocations)):
        return "invocation_id must be unique within a trajectory"
    calls = [call.model_call_id for call in trajectory.model_calls if call.model_call_id]
    if len(calls) != len(set(calls)):
        return "model_call_id must be unique within a trajectory"
    keys: set[tuple[str, int]] = set()
    for turn in trajectory.turns:
        if turn.task_id != trajectory.task_id or turn.rollout_id != trajectory.rollout_id:
            return "turn identity must match the trajectory"
        if (turn.invocation_id, turn.turn_no) in keys:
            return "turn number must be unique within an invocation"
        keys.add((turn.invocation_id, turn.turn_no))
    return None
