"""The ``ng_trajectory`` record, schema 1.0, as NeMo Gym 0.7.0 defines it.

NeMo Gym's rollout collection writes one ``TrajectoryRecord`` per rollout
(``nemo_gym/rollout_observability.py``); these models state the same schema so evalexport
accepts exactly the records Gym's own model accepts: the same field names, types and
optionality, unknown fields refused, JSON numbers where Gym takes floats (epoch-second
timestamps), and Gym's identity rules. Validation is strict, as in Gym's exporter: ``"3"`` is no
integer and ``1`` is no boolean.

The Responses items of a conversation are kept as raw JSON here; :mod:`.conversation` reads
them, since only four item types are convertible and each needs its own precise error.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = [
    "GymModelRef",
    "InvocationRecord",
    "ModelCallRecord",
    "ModelCallReference",
    "RecordError",
    "ToolCallRecord",
    "TrajectoryRecord",
    "TurnRecord",
    "validate_record",
]

NonNegativeInt = Annotated[int, Field(ge=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]
ItemStatus = Literal["in_progress", "completed", "incomplete"]


class RecordError(ValueError):
    """An ``ng_trajectory`` does not match schema 1.0; ``path`` names the offending field."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path
        self.detail = detail


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class GymModelRef(BaseModel):
    """``ModelServerRef``: which model server answered. Other keys would be dropped: refused."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    type: Literal["responses_api_models"]
    name: str

    def as_json(self) -> dict[str, str]:
        """The model reference as Gym's JSON holds it."""
        return {"type": self.type, "name": self.name}


class ModelCallReference(_Strict):
    """How a turn or an invocation names a captured model call."""

    model_call_id: str | None = None
    model_ref: GymModelRef | None = None
    response_id: str | None = None

    @model_validator(mode="after")
    def _has_join_key(self) -> ModelCallReference:
        if not self.model_call_id and not (self.model_ref is not None and self.response_id):
            raise ValueError("model_call_id or both model_ref and response_id are required")
        return self


class TokenStats(_Strict):
    """Token counts of one model call (``TrajectoryRecord`` schema 1.0)."""

    prompt_tokens: NonNegativeInt | None = None
    completion_tokens: NonNegativeInt | None = None
    reasoning_tokens: NonNegativeInt | None = None
    total_tokens: NonNegativeInt | None = None
    cached_tokens: NonNegativeInt | None = None

    def as_json(self) -> dict[str, int]:
        """``model_dump(mode="json", exclude_none=True)``, without pydantic's serializer (a
        model's ``__dict__`` holds its fields in their declared order)."""
        return {name: value for name, value in self.__dict__.items() if value is not None}


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

    def as_json(self) -> dict[str, object]:
        """``model_dump(mode="json", exclude_none=True)``, without pydantic's serializer (a
        model's ``__dict__`` holds its fields in their declared order)."""
        dumped = {name: value for name, value in self.__dict__.items() if value is not None}
        if self.model_ref is not None:
            dumped["model_ref"] = self.model_ref.as_json()
        return dumped


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

    def as_json(self) -> dict[str, object]:
        """``model_dump(mode="json", exclude_none=True)`` at a third of its cost: an ATIF step
        cites its model call this way. ``request`` and ``response`` are the row's JSON as it
        came (pydantic's dump would copy them unchanged); every other field is a JSON scalar
        or a model of this module. ``tests/trajectory/test_record_json.py`` holds it to
        pydantic's dump."""
        dumped = {name: value for name, value in self.__dict__.items() if value is not None}
        dumped["response_metadata"] = self.response_metadata.as_json()
        dumped["token_stats"] = self.token_stats.as_json()
        return dumped


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
        if (
            self.started_at is not None
            and self.completed_at is not None
            and self.completed_at < self.started_at
        ):
            raise ValueError("completed_at must not precede started_at")
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
        invocation_ids = [invocation.invocation_id for invocation in self.invocations]
        if len(invocation_ids) != len(set(invocation_ids)):
            raise ValueError("invocation_id must be unique within a trajectory")
        call_ids = [call.model_call_id for call in self.model_calls if call.model_call_id]
        if len(call_ids) != len(set(call_ids)):
            raise ValueError("model_call_id must be unique within a trajectory")
        keys: set[tuple[str, int]] = set()
        for turn in self.turns:
            if turn.task_id != self.task_id or turn.rollout_id != self.rollout_id:
                raise ValueError("turn identity must match the trajectory")
            key = (turn.invocation_id, turn.turn_no)
            if key in keys:
                raise ValueError("turn number must be unique within an invocation")
            keys.add(key)
        return self


def _error_path(location: tuple[int | str, ...]) -> str:
    path = "ng_trajectory"
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def validate_record(raw: object) -> TrajectoryRecord:
    """Validate a rollout's ``ng_trajectory``; :class:`RecordError` names the first bad field."""
    if not isinstance(raw, dict):
        kind = "missing" if raw is None else f"a JSON {type(raw).__name__}, not an object"
        raise RecordError("ng_trajectory", f"{kind}: expected a schema 1.0 trajectory record")
    try:
        return TrajectoryRecord.model_validate(raw)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        location = tuple(part for part in first["loc"] if not _is_union_tag(part))
        message = first["msg"].removeprefix("Value error, ")
        raise RecordError(_error_path(location), message) from None


def _is_union_tag(part: int | str) -> bool:
    # pydantic names union members in locations ("int", "float", "function-after[...]").
    return isinstance(part, str) and (part in {"int", "float", "str", "bool"} or "[" in part)
