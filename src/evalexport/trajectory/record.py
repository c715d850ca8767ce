"""The ``ng_trajectory`` record, schema 1.0, as NeMo Gym 0.7.0 defines it, read into typed
objects the conversion works on.

NeMo Gym's rollout collection writes one ``TrajectoryRecord`` per rollout
(``nemo_gym/rollout_observability.py``). These msgspec Structs state that schema: the same
field names, types, defaults and optionality, unknown fields refused, JSON numbers where Gym takes
floats (an integer becomes a float, as pydantic makes it), and Gym's identity rules
(:mod:`.record_rules`, in each Struct's ``__post_init__``). Validation is strict, as in Gym's
exporter: ``"3"`` is no integer and ``1`` is no boolean. This is the schema's one statement.

:func:`validate_record` converts a decoded record at a fifth of pydantic's cost; a record it
refuses is validated again by :mod:`.record_schema`'s pydantic models, derived from these
Structs, whose errors (each bad field's path and message, in pydantic's order) are the refusal.
``tests/trajectory/test_record_agreement.py`` holds the two to the same fields, defaults and
verdict on every drawn record.

The Responses items of a conversation are kept as raw JSON here; :mod:`.conversation` reads
them, since only four item types are convertible and each needs its own precise error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal

import msgspec

from evalexport.trajectory.record_rules import identity_problem, join_key_problem, timing_problem

__all__ = [
    "Gap",
    "GymModelRef",
    "InvocationRecord",
    "ModelCallRecord",
    "ModelCallReference",
    "RecordError",
    "ResponseMetadata",
    "TokenStats",
    "ToolCallRecord",
    "TrajectoryRecord",
    "TurnRecord",
    "validate_record",
]

NonNegativeInt = Annotated[int, msgspec.Meta(ge=0)]
NonNegativeFloat = Annotated[float, msgspec.Meta(ge=0)]


class RecordError(ValueError):
    """An ``ng_trajectory`` does not match schema 1.0; ``path`` names the offending field."""

    def __init__(self, path: str, detail: str, *, more: Sequence[tuple[str, str]] = ()) -> None:
        self.reasons: tuple[tuple[str, str], ...] = ((path, detail), *more)
        super().__init__("; ".join(f"{p}: {d}" for p, d in self.reasons))
        self.path = path
        self.detail = detail


# The schema -------------------------------------------------------------------------------------


class _Record(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A record of the schema: immutable, unknown fields refused, its fields in Gym's order
    (keyword-only, so a required field may follow a default). Each record restates the three
    options, which msgspec inherits and type checkers do not know it does."""

    gym_name: ClassVar[str]
    """The name of Gym's pydantic model this record states (``rollout_observability``), which
    a refusal names as Gym's own validation would."""


class GymModelRef(_Record, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """``ModelServerRef``: which model server answered. Other keys would be dropped: refused."""

    gym_name: ClassVar[str] = "ModelServerRef"
    type: Literal["responses_api_models"]
    name: str

    def as_json(self) -> dict[str, str]:
        """The model reference as Gym's JSON holds it."""
        return {"type": self.type, "name": self.name}


class ModelCallReference(_Record, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """How a turn or an invocation names a captured model call."""

    gym_name: ClassVar[str] = "ModelCallRef"
    model_call_id: str | None = None
    model_ref: GymModelRef | None = None
    response_id: str | None = None

    def __post_init__(self) -> None:
        if (problem := join_key_problem(self)) is not None:
            raise ValueError(problem)


def _not_none(record: msgspec.Struct) -> dict[str, Any]:
    """``model_dump(mode="json", exclude_none=True)`` of a record of scalars: its fields in
    their declared order, those that are set."""
    return {
        name: value
        for name, value in zip(record.__struct_fields__, _astuple(record), strict=True)
        if value is not None
    }


_astuple = msgspec.structs.astuple


class TokenStats(_Record, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Token counts of one model call (``TrajectoryRecord`` schema 1.0)."""

    gym_name: ClassVar[str] = "TrajectoryTokenStats"
    prompt_tokens: NonNegativeInt | None = None
    completion_tokens: NonNegativeInt | None = None
    reasoning_tokens: NonNegativeInt | None = None
    total_tokens: NonNegativeInt | None = None
    cached_tokens: NonNegativeInt | None = None

    def as_json(self) -> dict[str, int]:
        """``model_dump(mode="json", exclude_none=True)`` of Gym's model."""
        return _not_none(self)


class ResponseMetadata(_Record, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What a model call's response said about itself: id, model, finish reason."""

    gym_name: ClassVar[str] = "TrajectoryResponseMetadata"
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
        """``model_dump(mode="json", exclude_none=True)`` of Gym's model."""
        dumped = _not_none(self)
        if self.model_ref is not None:
            dumped["model_ref"] = self.model_ref.as_json()
        return dumped


class ModelCallRecord(_Record, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One model call of a turn, as ``ng_trajectory`` records it."""

    gym_name: ClassVar[str] = "TrajectoryModelCall"
    model_call_id: str | None = None
    started_at: float | None = None
    completed_at: float | None = None
    duration_ms: NonNegativeFloat | None = None
    request: Any = None
    response: Any = None
    response_metadata: ResponseMetadata = msgspec.field(default_factory=ResponseMetadata)
    token_stats: TokenStats = msgspec.field(default_factory=TokenStats)

    def as_json(self) -> dict[str, object]:
        """``model_dump(mode="json", exclude_none=True)`` of Gym's model: an ATIF step cites
        its model call this way. ``request`` and ``response`` are the row's JSON as it came
        (pydantic's dump would copy them unchanged); every other field is a JSON scalar or a
        record of this module. ``tests/trajectory/test_record_json.py`` holds it to
        pydantic's dump."""
        dumped = _not_none(self)
        dumped["response_metadata"] = self.response_metadata.as_json()
        dumped["token_stats"] = self.token_stats.as_json()
        return dumped


class TurnRecord(_Record, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One turn of an agent: its model calls and tool calls."""

    gym_name: ClassVar[str] = "TrajectoryTurn"
    invocation_id: str
    task_id: str
    rollout_id: str
    turn_no: Annotated[int, msgspec.Meta(ge=1)]
    timestamp: float
    question: Any = None
    answer: Any = None
    reasoning_content: Any = None
    resolved: bool | None = None
    step_count: NonNegativeInt
    model_calls: list[ModelCallReference] = []


class InvocationRecord(_Record, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One invocation of the agent: its status and turns."""

    gym_name: ClassVar[str] = "AgentInvocation"
    kind: Literal["agent_invocation"] = "agent_invocation"
    invocation_id: str
    parent_invocation_id: str | None = None
    spawned_by_tool_call_id: str | None = None
    status: Literal["completed", "failed", "incomplete", "unknown"] = "unknown"
    duration_ms: NonNegativeFloat | None = None
    error_type: str | None = None
    model_calls: list[ModelCallReference] = []
    conversation: list[Any] = []


class ToolCallRecord(_Record, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One tool call of a turn: the call, its output and status."""

    gym_name: ClassVar[str] = "TrajectoryToolCall"
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
    output: Any = None

    def __post_init__(self) -> None:
        if (problem := timing_problem(self)) is not None:
            raise ValueError(problem)


class Gap(_Record, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A coverage gap the recorder declared: what is missing from the trajectory, and why."""

    gym_name: ClassVar[str] = "ObservationGap"
    code: str
    invocation_id: str | None = None
    detail: str | None = None

    def as_json(self) -> dict[str, str]:
        """``model_dump(mode="json", exclude_none=True)`` of Gym's model."""
        return _not_none(self)


class TrajectoryRecord(_Record, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """``ng_trajectory`` as NeMo Gym's ``rollout_observability.TrajectoryRecord`` (schema 1.0)
    defines it."""

    gym_name: ClassVar[str] = "TrajectoryRecord"
    schema_version: Literal["1.0"] = "1.0"
    task_id: str
    rollout_id: str
    invocations: list[InvocationRecord] = []
    turns: list[TurnRecord] = []
    model_calls: list[ModelCallRecord] = []
    tool_calls: list[ToolCallRecord] = []
    gaps: list[Gap] = []

    def __post_init__(self) -> None:
        problem = identity_problem(self)
        if problem is not None:
            raise ValueError(problem)


# Reading a record -------------------------------------------------------------------------------


def validate_record(raw: object) -> TrajectoryRecord:
    """Validate a rollout's ``ng_trajectory``; :class:`RecordError` names the first bad field."""
    if not isinstance(raw, dict):
        kind = "missing" if raw is None else f"a JSON {type(raw).__name__}, not an object"
        raise RecordError("ng_trajectory", f"{kind}: expected a schema 1.0 trajectory record")
    try:
        return msgspec.convert(raw, TrajectoryRecord)
    except msgspec.ValidationError:
        return _worded_refusal(raw)


def _worded_refusal(raw: dict[str, Any]) -> TrajectoryRecord:
    """Raise pydantic's errors for a record the Structs refused, as :class:`RecordError`: each
    field's first, in pydantic's order.

    Should pydantic accept it (the schemas are held to the same verdicts, so this is a bug),
    the record is not refused for it: it is read from pydantic's validated models."""
    from pydantic import BaseModel, ValidationError

    from evalexport.trajectory.record_schema import model_of

    try:
        model = model_of(TrajectoryRecord).model_validate(raw)
    except ValidationError as error:
        reasons: dict[str, str] = {}
        for each in error.errors(include_url=False):
            location = tuple(part for part in each["loc"] if not _is_union_tag(part))
            reasons.setdefault(_error_path(location), each["msg"].removeprefix("Value error, "))
        (path, detail), *more = reasons.items()
        raise RecordError(path, detail, more=more) from None

    def struct_of(value: Any) -> Any:
        if isinstance(value, BaseModel):
            fields = {name: struct_of(getattr(value, name)) for name in type(value).model_fields}
            return _BY_GYM_NAME[type(value).__name__](**fields)
        if isinstance(value, list):
            return [struct_of(item) for item in value]
        return value

    record: TrajectoryRecord = struct_of(model)
    return record


def _error_path(location: tuple[int | str, ...]) -> str:
    path = "ng_trajectory"
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _is_union_tag(part: int | str) -> bool:
    # pydantic names union members in locations ("int", "float", "function-after[...]").
    return isinstance(part, str) and (part in {"int", "float", "str", "bool"} or "[" in part)


_BY_GYM_NAME: dict[str, type[_Record]] = {each.gym_name: each for each in _Record.__subclasses__()}
"""Each record of the schema by the name of Gym's model, the name its derived model bears."""
