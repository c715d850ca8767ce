"""The ``ng_trajectory`` record, schema 1.0, as NeMo Gym 0.7.0 defines it, in pydantic.

NeMo Gym's rollout collection writes one ``TrajectoryRecord`` per rollout
(``nemo_gym/rollout_observability.py``); these models state the same schema so evalexport
accepts exactly the records Gym's own model accepts: the same field names, types and
optionality, unknown fields refused, JSON numbers where Gym takes floats (epoch-second
timestamps), and Gym's identity rules. Validation is strict, as in Gym's exporter: ``"3"`` is no
integer and ``1`` is no boolean.

The conversion reads records as :mod:`.record`'s msgspec Structs, which state this schema again
and validate a record at a fifth of pydantic's cost; these models word a refusal (the first
bad field's path and pydantic's message) and stand as the reference the Structs are held to
(``tests/trajectory/test_record_agreement.py``: the same fields, defaults and verdicts).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalexport.trajectory.record_rules import identity_problem, join_key_problem, timing_problem

__all__ = [
    "Gap",
    "GymModelRef",
    "InvocationRecord",
    "ModelCallRecord",
    "ModelCallReference",
    "ResponseMetadata",
    "TokenStats",
    "ToolCallRecord",
    "TrajectoryRecord",
    "TurnRecord",
]

NonNegativeInt = Annotated[int, Field(ge=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class GymModelRef(BaseModel):
    """``ModelServerRef``: which model server answered. Other keys would be dropped: refused."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    type: Literal["responses_api_models"]
    name: str


class ModelCallReference(_Strict):
    """How a turn or an invocation names a captured model call."""

    model_call_id: str | None = None
    model_ref: GymModelRef | None = None
    response_id: str | None = None

    @model_validator(mode="after")
    def _has_join_key(self) -> ModelCallReference:
        if (problem := join_key_problem(self)) is not None:
            raise ValueError(problem)
        return self


class TokenStats(_Strict):
    """Token counts of one model call (``TrajectoryRecord`` schema 1.0)."""

    prompt_tokens: NonNegativeInt | None = None
    completion_tokens: NonNegativeInt | None = None
    reasoning_tokens: NonNegativeInt | None = None
    total_tokens: NonNegativeInt | None = None
    cached_tokens: NonNegativeInt | None = None


class ResponseMetadata(_Strict):
    """What a model call's response said about itself: id, model, finish reason."""

    response_id: str | None = None
    model_ref: GymModelRef | None = None
    model: str | None = None
    dialect: str | None = None
    status_code: int | None = None
    response_status: str | None = None
    finish_reason: str | None = None
    upstream_attempted: bool | None = None
    response_source: Literal["upstream", "local"] | None = None
    upstream_status_code: int | None = None
    local_response_reason: str | None = None
    error_category: str | None = None
    latency_ttft_ms: NonNegativeFloat | None = None


class ModelCallRecord(_Strict):
    """One model call of a turn, as ``ng_trajectory`` records it."""

    model_call_id: str | None = None
    started_at: float | None = None
    completed_at: float | None = None
    duration_ms: NonNegativeFloat | None = None
    request: object = None
    response: object = None
    response_metadata: ResponseMetadata = Field(default_factory=ResponseMetadata)
    token_stats: TokenStats = Field(default_factory=TokenStats)


class TurnRecord(_Strict):
    """One turn of an agent: its model calls and tool calls."""

    invocation_id: str
    task_id: str
    rollout_id: str
    turn_no: int = Field(ge=1)
    timestamp: float
    question: object = None
    answer: object = None
    reasoning_content: object = None
    resolved: bool | None = None
    step_count: NonNegativeInt
    model_calls: list[ModelCallReference] = []


class InvocationRecord(_Strict):
    """One invocation of the agent: its status and turns."""

    kind: Literal["agent_invocation"] = "agent_invocation"
    invocation_id: str
    parent_invocation_id: str | None = None
    spawned_by_tool_call_id: str | None = None
    status: Literal["completed", "failed", "incomplete", "unknown"] = "unknown"
    duration_ms: NonNegativeFloat | None = None
    error_type: str | None = None
    model_calls: list[ModelCallReference] = []
    conversation: list[object] = []


class ToolCallRecord(_Strict):
    """One tool call of a turn: the call, its output and status."""

    kind: Literal["tool_call"] = "tool_call"
    invocation_id: str
    tool_call_id: str
    sandbox_id: str | None = None
    tool_name: str | None = None
    started_at: float | None = None
    completed_at: float | None = None
    duration_ms: NonNegativeFloat | None = None
    timing_source: Literal["executor", "artifact", "harness"] | None = None
    status: Literal["completed", "failed", "timeout", "cancelled", "incomplete", "unknown"] = (
        "unknown"
    )
    error_type: str | None = None
    output: object = None

    @model_validator(mode="after")
    def _ordered_timing(self) -> ToolCallRecord:
        if (problem := timing_problem(self)) is not None:
            raise ValueError(problem)
        return self


class Gap(_Strict):
    """A coverage gap the recorder declared: what is missing from the trajectory, and why."""

    code: str
    invocation_id: str | None = None
    detail: str | None = None


class TrajectoryRecord(_Strict):
    """``ng_trajectory`` as NeMo Gym's ``rollout_observability.TrajectoryRecord`` (schema 1.0)
    defines it."""

    schema_version: Literal["1.0"] = "1.0"
    task_id: str
    rollout_id: str
    invocations: list[InvocationRecord] = []
    turns: list[TurnRecord] = []
    model_calls: list[ModelCallRecord] = []
    tool_calls: list[ToolCallRecord] = []
    gaps: list[Gap] = []

    @model_validator(mode="after")
    def _identity(self) -> TrajectoryRecord:
        problem = identity_problem(self)
        if problem is not None:
            raise ValueError(problem)
        return self
