"""One rollout's ``ng_trajectory`` to one ATIF v1.7 trajectory (SPEC §4).

The conversion is NeMo Gym's strict profile (``ng-trajectory-to-atif-v1``, the profile of
``nemo_gym/atif_export.py`` in nemo-gym 0.7.0), written anew: on every rollout Gym's exporter
accepts, :func:`convert_rollout` returns the same document, byte for byte once encoded, and it
refuses the rollouts Gym refuses, naming the row's field path. Steps come from the root
invocation's conversation (:mod:`.steps`); each turn must agree with the step it describes and
brings the step's timestamp, model, token metrics and model-call evidence.

Beyond Gym, ``allowed_gaps`` lets a caller export rollouts whose only coverage gaps are the
listed codes, and ``relaxations`` (:mod:`.relaxations`) rollouts the strict profile refuses for
reasons that lose nothing; each such trajectory says so in ``extra.nemo_gym`` (see
:func:`convert_rollout`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, final

from evalexport.trajectory.conversation import Item, ItemError, read_items
from evalexport.trajectory.record import (
    ModelCallRecord,
    ModelCallReference,
    RecordError,
    TrajectoryRecord,
    TurnRecord,
    validate_record,
)
from evalexport.trajectory.relaxations import Relaxation, Relaxations
from evalexport.trajectory.steps import AgentGroup, Step, StepBuilder, TrajectoryError
from evalexport.trajectory.strict_json import unencodable_path

__all__ = [
    "ATIF_SCHEMA_VERSION",
    "CONVERSION_PROFILE",
    "ConvertedTrajectory",
    "TrajectoryIdentity",
    "convert_rollout",
    "encode_json",
    "rollout_index",
]

ATIF_SCHEMA_VERSION: Final = "ATIF-v1.7"
CONVERSION_PROFILE: Final = "ng-trajectory-to-atif-v1"
REFERENCE_EXPORTER: Final = {"name": "nemo-gym", "version": "0.7.0"}
"""Recorded in every trajectory's ``extra.nemo_gym.exporter``: the files evalexport writes are
those of nemo-gym 0.7.0's strict exporter, byte for byte, and consumers key on that profile."""

TASK_INDEX: Final = "_ng_task_index"
ROLLOUT_INDEX: Final = "_ng_rollout_index"
_ENVIRONMENT_SERVER: Final = "_ng_environment_server"
TURNS_UNAVAILABLE: Final = "turns_unavailable"

GYM_GAP_CODES: Final = frozenset(
    {
        "agent_observation_join_failed",
        "agent_observations_invalid",
        "compaction_model_call_join_failed",
        "conversation_unavailable",
        "duplicate_call_id_conflict",
        "model_call_capture_gap_invalid",
        "model_call_capture_incomplete",
        "model_call_capture_no_records",
        "model_call_capture_records_unreadable",
        "model_call_capture_unreadable",
        "model_call_ownership_unavailable",
        "model_call_reference_ambiguous",
        "model_call_reference_conflict",
        "model_call_reference_unmatched",
        "model_calls_unavailable",
        "producer_trajectory_identity_mismatch",
        "producer_trajectory_invalid",
        "resolution_unavailable",
        "trajectory_projection_failed",
        "turns_unavailable",
    }
)
"""The coverage gap codes NeMo Gym 0.7.0's recorders and agents write (an agent may write its
own: ``+allow_gaps`` takes any code a row of the run records, and these)."""

_INCOMPLETE_FINISH_REASONS = frozenset(
    {
        "aborted", "canceled", "cancelled", "content_filter", "failed", "incomplete", "length",
        "max_output_tokens", "max_tokens", "model_context_window_exceeded", "pause_turn",
        "refusal", "timed_out", "timeout",
    }
)  # fmt: skip


@final
@dataclass(frozen=True)
class TrajectoryIdentity:
    """Who made the trajectories and the session they belong to: the exporter's options."""

    session_id: str
    agent_version: str
    agent_name: str | None = None
    """Overrides each rollout's ``agent_ref.name`` when set (not a Gym option)."""


@final
@dataclass(frozen=True)
class ConvertedTrajectory:
    """An ATIF document ready to write, and the facts the manifest and the result need."""

    task_index: int
    rollout_index: int
    document: dict[str, Any]
    gap_codes: tuple[str, ...] = ()
    relaxations: tuple[str, ...] = ()
    """The relaxations of the strict profile this rollout needed, sorted."""

    @property
    def file_name(self) -> str:
        """``<task>-<rollout>.json``: the trajectory's file name, as Gym names it."""
        return f"{self.task_index}-{self.rollout_index}.json"

    def encode(self) -> bytes:
        """The file's bytes: pydantic's JSON with a 2-space indent, as Gym writes it."""
        return encode_json(self.document)


_E_DIGIT: Final = re.compile(rb"e[0-9]")
"""Starts with a literal, so the search skips ahead as ``bytes.find`` does (a pattern starting
with ``[0-9]`` costs ten times as much on a trajectory file)."""


def _positive_exponent(data: bytes) -> bool:
    """Whether ``data`` holds a digit, ``e`` and a digit in a row: how msgspec writes a float
    with a positive exponent (``1e16``, where pydantic writes ``1e+16``)."""
    for match in _E_DIGIT.finditer(data):
        before = match.start() - 1
        if before >= 0 and 0x30 <= data[before] <= 0x39:
            return True
    return False


@functools.cache
def _fast_encoder() -> Callable[[Any], bytes | None] | None:
    """msgspec's encoder and indenter, where msgspec is installed; ``None`` for a document it
    cannot write (pydantic then says why)."""
    try:
        import msgspec
    except ImportError:
        return None
    encode, indent = msgspec.json.Encoder().encode, msgspec.json.format
    refused = (msgspec.MsgspecError, TypeError, ValueError, RecursionError)

    def encoded(document: Any) -> bytes | None:
        try:
            return indent(encode(document), indent=2)
        except refused:
            return None

    return encoded


def encode_json(document: Any) -> bytes:
    """``document`` as Gym writes a trajectory file: pydantic-core's JSON, indented by two
    spaces, and a line break.

    msgspec writes the same bytes in half the time, but for one thing: a float with a positive
    exponent (``1e+16`` is ``1e16`` there). Its bytes are kept unless they hold a digit, an
    ``e`` and a digit in a row (a float so written, or such text in a string), and pydantic
    writes the rest (``tests/property/test_trajectory_encoding.py``).
    """
    fast = _fast_encoder()
    data = fast(document) if fast is not None else None
    if data is not None and not _positive_exponent(data):
        return data + b"\n"
    from pydantic_core import to_json

    return to_json(document, indent=2) + b"\n"


def rollout_index(row: dict[str, Any], key: str, where: str) -> int:
    """``_ng_task_index`` or ``_ng_rollout_index``: a non-negative integer, never a boolean."""
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TrajectoryError(f"{where}{key}", f"expected a non-negative integer, got {value!r}")
    return value


def convert_rollout(
    row: dict[str, Any],
    identity: TrajectoryIdentity,
    *,
    allowed_gaps: Collection[str] = (),
    relaxations: Collection[Relaxation] = (),
    check_strings: bool = True,
) -> ConvertedTrajectory:
    """Convert one rollout row, or raise :class:`TrajectoryError` naming what cannot convert.

    Strict by default: a record with any coverage gap is refused. Gap codes in
    ``allowed_gaps`` are accepted instead; the trajectory then lists its gaps in
    ``extra.nemo_gym.gaps`` and its conversion status is ``partial``. With
    ``turns_unavailable`` allowed and no turns recorded, steps come from the conversation alone
    and every model call is kept under ``surplus_model_calls``.

    ``relaxations`` lists the relaxations of the strict profile the rollout may use
    (:data:`.relaxations.RELAXATIONS`); those it needs are listed in
    ``extra.nemo_gym.relaxations``, and its conversion status is ``partial``.

    ``check_strings=False`` skips the search for lone surrogates, for a caller that knows the
    row's JSON text holds no ``\\uD800``-``\\uDFFF`` escape (the only way one gets in).
    """
    if check_strings and (path := unencodable_path(row, "rollout")):
        raise TrajectoryError(
            path, "contains an unpaired Unicode surrogate and is not valid UTF-8 JSON"
        )
    try:
        trajectory = validate_record(row.get("ng_trajectory"))
    except RecordError as error:
        raise TrajectoryError(error.path, error.detail) from None
    gap_codes = tuple(gap.code for gap in trajectory.gaps)
    refused = sorted({code for code in gap_codes if code not in allowed_gaps})
    if refused:
        raise TrajectoryError(
            "ng_trajectory.gaps",
            f"source coverage gaps are not supported by strict export ({', '.join(refused)}); "
            f"+allow_gaps=[{','.join(refused)}] accepts these gaps if the rest converts",
        )
    agent_name = identity.agent_name or _agent_label(row)
    task = rollout_index(row, TASK_INDEX, "")
    rollout = rollout_index(row, ROLLOUT_INDEX, "")
    relax = Relaxations(relaxations)
    try:
        conversion = _Conversion(trajectory, gap_codes, relax)
        document = conversion.document(identity, agent_name, task, rollout)
    except ItemError as error:
        path, _, detail = str(error).partition(": ")
        raise TrajectoryError(path, detail) from None
    nemo_gym = document["extra"]["nemo_gym"]
    if trajectory.gaps:
        nemo_gym["conversion"]["status"] = "partial"
        nemo_gym["gaps"] = [
            gap.model_dump(mode="json", exclude_none=True) for gap in trajectory.gaps
        ]
    applied = relax.applied() if relax.used else ()
    if applied:
        nemo_gym["conversion"]["status"] = "partial"
        nemo_gym["relaxations"] = list(applied)
    return ConvertedTrajectory(task, rollout, document, gap_codes, applied)


def agent_label(row: dict[str, Any]) -> Any:
    """The agent a row names: ``agent_ref.name``, else the environment server that ran it."""
    agent_ref = row.get("agent_ref")
    name = agent_ref.get("name") if isinstance(agent_ref, dict) else None
    return name if name is not None else row.get(_ENVIRONMENT_SERVER)


def _agent_label(row: dict[str, Any]) -> str:
    agent_ref = row.get("agent_ref")
    if agent_ref is not None and not isinstance(agent_ref, dict):
        if agent_ref:
            raise TrajectoryError("agent_ref", f"expected an object with a name, got {agent_ref!r}")
    elif isinstance(agent_ref, dict):
        unknown = sorted(repr(key) for key in agent_ref if key not in ("type", "name"))
        if unknown:
            raise TrajectoryError(
                "agent_ref", f"unsupported fields would be dropped: {', '.join(unknown)}"
            )
        if agent_ref.get("type") not in (None, "responses_api_agents"):
            raise TrajectoryError("agent_ref.type", "expected responses_api_agents when present")
    name = agent_label(row)
    if not isinstance(name, str) or not name.strip():
        raise TrajectoryError(
            "agent_ref", "expected a non-empty agent_ref.name or environment server stamp"
        )
    return name


class _Conversion:
    def __init__(
        self, trajectory: TrajectoryRecord, gap_codes: tuple[str, ...], relax: Relaxations
    ) -> None:
        self.trajectory = trajectory
        self.relax = relax
        self.without_turns = TURNS_UNAVAILABLE in gap_codes and not trajectory.turns
        if not trajectory.task_id.strip() or not trajectory.rollout_id.strip():
            raise TrajectoryError("ng_trajectory", "task_id and rollout_id cannot be blank")
        if len(trajectory.invocations) != 1:
            raise TrajectoryError(
                "ng_trajectory.invocations",
                f"expected exactly one root invocation, got {len(trajectory.invocations)}",
            )
        invocation = self.invocation = trajectory.invocations[0]
        where = "ng_trajectory.invocations[0]"
        if not invocation.invocation_id.strip():
            raise TrajectoryError(f"{where}.invocation_id", "cannot be blank")
        if (
            invocation.parent_invocation_id is not None
            or invocation.spawned_by_tool_call_id is not None
        ):
            raise TrajectoryError(where, "subagent invocations are not supported")
        if invocation.status != "completed" and not relax.permits("failures"):
            raise TrajectoryError(
                f"{where}.status", f"expected completed, got {invocation.status!r}"
            )
        if invocation.error_type is not None and not relax.permits("failures"):
            raise TrajectoryError(
                f"{where}.error_type",
                f"completed invocation records error {invocation.error_type!r}",
            )
        self.calls = trajectory.model_calls
        self.by_id: dict[str, list[int]] = {}
        self.by_response: dict[tuple[str, str, str], list[int]] = {}
        for index, call in enumerate(self.calls):
            if call.model_call_id and call.model_call_id.strip():
                self.by_id.setdefault(call.model_call_id, []).append(index)
            metadata = call.response_metadata
            if (
                metadata.model_ref is not None
                and metadata.response_id
                and metadata.response_id.strip()
            ):
                key = (metadata.model_ref.type, metadata.model_ref.name, metadata.response_id)
                self.by_response.setdefault(key, []).append(index)

    def document(
        self, identity: TrajectoryIdentity, agent_name: str, task: int, rollout: int
    ) -> dict[str, Any]:
        answers = () if self.without_turns else [turn.answer for turn in self.trajectory.turns]
        builder = StepBuilder(self.invocation, self.trajectory.tool_calls, self.relax, answers)
        steps, groups = builder.build()
        if not self.without_turns and len(self.trajectory.turns) > len(groups):
            self._add_unanswered_steps(builder)
        used = set() if self.without_turns else self._apply_turns(groups)
        surplus = [call.as_json() for index, call in enumerate(self.calls) if index not in used]
        names = [group.step.model_name for group in groups]
        model_name = names[0] if None not in names and len(set(names)) == 1 else None
        agent: dict[str, Any] = {"name": agent_name, "version": identity.agent_version}
        if model_name is not None:
            agent["model_name"] = model_name
        invocation = self.invocation
        source: dict[str, Any] = {
            "format": "ng_trajectory",
            "schema_version": self.trajectory.schema_version,
            "task_id": self.trajectory.task_id,
            "rollout_id": self.trajectory.rollout_id,
            "task_index": task,
            "rollout_index": rollout,
            "invocation_id": invocation.invocation_id,
            "invocation_status": invocation.status,
        }
        if invocation.error_type is not None:  # kept with ``failures`` relaxed
            source["invocation_error_type"] = invocation.error_type
        if invocation.duration_ms is not None:
            source["invocation_duration_ms"] = invocation.duration_ms
        nemo_gym: dict[str, Any] = {
            "exporter": dict(REFERENCE_EXPORTER),
            "source": source,
            "conversion": {"profile": CONVERSION_PROFILE, "status": "complete"},
        }
        if surplus:
            nemo_gym["surplus_model_calls"] = surplus
        return {
            "schema_version": ATIF_SCHEMA_VERSION,
            "session_id": identity.session_id,
            "trajectory_id": f"{identity.session_id}:{task}:{rollout}",
            "agent": agent,
            "steps": [step.to_json() for step in steps],
            "final_metrics": _final_metrics(groups, len(steps)),
            "extra": {"nemo_gym": nemo_gym},
        }

    def _add_unanswered_steps(self, builder: StepBuilder) -> None:
        """With ``failures`` relaxed, each turn past the conversation's last agent step whose
        answer is empty (a model call that returned nothing) becomes an empty agent step."""
        turns = self.trajectory.turns[len(builder.groups) :]
        if turns and all(turn.answer == [] for turn in turns) and self.relax.permits("failures"):
            for _ in turns:
                builder.add_unanswered_step()

    def _resolve(self, ref: ModelCallReference, path: str) -> tuple[int, ModelCallRecord]:
        if ref.model_call_id is not None and not ref.model_call_id.strip():
            raise TrajectoryError(f"{path}.model_call_id", "cannot be blank")
        if ref.response_id is not None and not ref.response_id.strip():
            raise TrajectoryError(f"{path}.response_id", "cannot be blank")
        if ref.model_call_id:
            candidates = self.by_id.get(ref.model_call_id, [])
            if not candidates:
                raise TrajectoryError(path, f"unknown model_call_id {ref.model_call_id!r}")
            what = "model_call_id"
        else:
            assert ref.model_ref is not None
            assert ref.response_id is not None
            key = (ref.model_ref.type, ref.model_ref.name, ref.response_id)
            candidates = self.by_response.get(key, [])
            if not candidates:
                raise TrajectoryError(
                    path,
                    f"model_ref {ref.model_ref.name!r} and response_id {ref.response_id!r} "
                    "do not match a captured model call",
                )
            what = "model_ref and response_id"
        if len(candidates) > 1:
            raise TrajectoryError(path, f"{what} match more than one captured model call")
        index = candidates[0]
        call = self.calls[index]
        if call.model_call_id is not None and not call.model_call_id.strip():
            raise TrajectoryError(
                f"ng_trajectory.model_calls[{index}].model_call_id", "cannot be blank"
            )
        captured_response_id = call.response_metadata.response_id
        if captured_response_id is not None and not captured_response_id.strip():
            raise TrajectoryError(
                f"ng_trajectory.model_calls[{index}].response_metadata.response_id",
                "cannot be blank",
            )
        if ref.response_id is not None and ref.response_id != captured_response_id:
            raise TrajectoryError(path, "response_id conflicts with the captured model call")
        if ref.model_ref is not None and ref.model_ref != call.response_metadata.model_ref:
            raise TrajectoryError(path, "model_ref conflicts with the captured model call")
        return index, call

    def _apply_turns(self, groups: list[AgentGroup]) -> set[int]:
        turns = self.trajectory.turns
        if len(turns) != len(groups):
            raise TrajectoryError(
                "ng_trajectory.turns",
                f"expected one turn for each of {len(groups)} agent steps, got {len(turns)}",
            )
        used: set[int] = set()
        tool_calls_so_far = 0
        for index, (turn, group) in enumerate(zip(turns, groups, strict=True)):
            path = f"ng_trajectory.turns[{index}]"
            differing = self._check_turn_copy(turn, group, index, path)
            tool_calls_so_far += group.tool_call_count
            if turn.step_count != tool_calls_so_far and not self.relax.permits("turn_copies"):
                raise TrajectoryError(
                    f"{path}.step_count",
                    f"does not match the cumulative tool-call count {tool_calls_so_far}",
                )
            if len(turn.model_calls) != 1:
                raise TrajectoryError(
                    f"{path}.model_calls",
                    f"expected exactly one captured model call, got {len(turn.model_calls)}",
                )
            call_index, call = self._resolve(turn.model_calls[0], f"{path}.model_calls[0]")
            if call_index in used:
                raise TrajectoryError(
                    f"{path}.model_calls[0]", "model call is referenced by more than one turn"
                )
            used.add(call_index)
            _check_completed(call, group.step, path, self.relax)
            _describe_step(group, turn, call, path, differing)
        self._check_invocation_calls(used)
        return used

    def _check_turn_copy(
        self, turn: TurnRecord, group: AgentGroup, index: int, path: str
    ) -> dict[str, Any]:
        """Check the turn's copies of its step's items; return those that differ and are kept
        verbatim (``turn_copies`` relaxed), by field name."""
        if turn.invocation_id != self.invocation.invocation_id:
            raise TrajectoryError(f"{path}.invocation_id", "does not match the root invocation")
        if turn.turn_no != index + 1:
            raise TrajectoryError(f"{path}.turn_no", "turns must be ordered sequentially from 1")
        differing: dict[str, Any] = {}
        for name, expected, meaning in (
            ("question", group.question, "the model-visible conversation prefix"),
            ("answer", group.answer, "the exported agent answer"),
            ("reasoning_content", group.reasoning or None, "the exported reasoning"),
        ):
            copy = getattr(turn, name)
            if _verbatim_copy(copy, expected):
                continue
            # A copy kept verbatim needs no relaxation to be read: count those only if it agrees.
            reading = self.relax.trial() if self.relax.allowed else self.relax
            try:
                canonical = None if copy is None else read_items(copy, f"{path}.{name}", reading)
            except ItemError:
                if not self.relax.permits("turn_copies"):
                    raise
                differing[name] = copy
                continue
            if not _same_items(canonical, expected):
                if not self.relax.permits("turn_copies"):
                    raise TrajectoryError(f"{path}.{name}", f"does not match {meaning}")
                differing[name] = copy
                continue
            self.relax.adopt(reading)
        return differing

    def _check_invocation_calls(self, used: set[int]) -> None:
        path = "ng_trajectory.invocations[0].model_calls"
        referenced = [
            self._resolve(ref, f"{path}[{index}]")[0]
            for index, ref in enumerate(self.invocation.model_calls)
        ]
        if len(referenced) != len(set(referenced)):
            raise TrajectoryError(path, "must not reference a captured model call more than once")
        missing = used - set(referenced)
        if missing:
            raise TrajectoryError(
                path,
                "must reference every turn-selected model call; "
                f"missing model_calls indices: {sorted(missing)}",
            )


def _verbatim_copy(copy: Any, expected: list[Item] | None) -> bool:
    """Whether a turn's copy holds the very items of the conversation, field for field.

    Then its canonical form is theirs too: every field of a convertible item is a string, a
    list or ``null``, where Python's == is JSON equality, so the copy need not be read again.
    """
    return expected is not None and copy == [item.raw for item in expected]


def _same_items(copy: Any, expected: Any) -> bool:
    if copy is None or expected is None:
        return copy is None and expected is None
    # Canonical items hold only strings, lists and objects, where == is JSON equality.
    return [item.canonical for item in copy] == [item.canonical for item in expected]


def _check_completed(call: ModelCallRecord, step: Step, path: str, relax: Relaxations) -> None:
    """Refuse a model call that did not prove a complete response, unless relaxed: ``failures``
    for a failed or truncated call, ``finish_reasons`` for a reason contradicting the output.
    The step's model-call evidence keeps every field either relaxation lets through."""
    metadata = call.response_metadata
    if metadata.response_status not in (None, "completed") and not relax.permits("failures"):
        raise TrajectoryError(path, f"model call is {metadata.response_status!r}, not completed")
    if metadata.error_category is not None and not relax.permits("failures"):
        raise TrajectoryError(
            path, f"model call records provider error {metadata.error_category!r}"
        )
    if (
        metadata.status_code is not None
        and not 200 <= metadata.status_code < 300
        and not relax.permits("failures")
    ):
        raise TrajectoryError(
            path, f"model call returned non-success status {metadata.status_code}"
        )
    if metadata.model is not None and not metadata.model.strip():
        raise TrajectoryError(f"{path}.model_calls[0].model", "cannot be blank")
    reason = metadata.finish_reason
    if reason is None:
        return
    if not reason.strip():
        raise TrajectoryError(f"{path}.model_calls[0].finish_reason", "cannot be blank")
    normalized = reason.strip().lower()
    if normalized in _INCOMPLETE_FINISH_REASONS:
        if relax.permits("failures"):
            return  # a truncated call: its reason need not prove completion
        raise TrajectoryError(
            path, f"finish reason {reason!r} indicates an incomplete model response"
        )
    uses_tools = bool(step.tool_calls)
    if metadata.dialect == "chat":
        allowed = {"tool_calls", "function_call"} if uses_tools else {"stop"}
        if normalized not in allowed and not relax.permits("finish_reasons"):
            raise TrajectoryError(
                path, f"Chat finish reason {reason!r} does not prove a completed response"
            )
    if metadata.dialect == "messages":
        allowed = {"tool_use"} if uses_tools else {"end_turn", "stop_sequence"}
        if normalized not in allowed and not relax.permits("finish_reasons"):
            raise TrajectoryError(
                path, f"Messages stop reason {reason!r} does not prove a completed response"
            )
    if (
        uses_tools
        and normalized in {"stop", "end_turn", "stop_sequence"}
        and not relax.permits("finish_reasons")
    ):
        raise TrajectoryError(path, f"finish reason {reason!r} contradicts the captured tool calls")
    if (
        not uses_tools
        and normalized in {"tool_calls", "tool_use", "function_call"}
        and not relax.permits("finish_reasons")
    ):
        raise TrajectoryError(
            path, f"finish reason {reason!r} contradicts the captured text-only output"
        )


def _describe_step(
    group: AgentGroup,
    turn: TurnRecord,
    call: ModelCallRecord,
    path: str,
    differing_copies: dict[str, Any],
) -> None:
    """Give an agent step its turn's timestamp and its model call's model, metrics and evidence
    (with the turn's copies that differ from the conversation, kept verbatim)."""
    step = group.step
    try:
        moment = datetime.fromtimestamp(turn.timestamp, UTC)
    except (OverflowError, OSError, ValueError):
        raise TrajectoryError(
            f"{path}.timestamp",
            f"{turn.timestamp!r} cannot be represented as an ISO 8601 timestamp",
        ) from None
    step.timestamp = moment.isoformat().replace("+00:00", "Z")
    step.model_name = call.response_metadata.model
    step.llm_call_count = 1
    step.metrics = _step_metrics(call, path)
    turn_facts: dict[str, Any] = {"turn_no": turn.turn_no, "step_count": turn.step_count}
    if turn.resolved is not None:
        turn_facts["resolved"] = turn.resolved
    evidence: dict[str, Any] = {
        "turn": turn_facts,
        "model_call": call.as_json(),
    }
    if group.source_items:
        evidence["source_items"] = group.source_items
    if differing_copies:
        evidence["turn_copies"] = differing_copies
    step.extra = {"nemo_gym": evidence}


def _step_metrics(call: ModelCallRecord, path: str) -> dict[str, Any] | None:
    stats = call.token_stats
    prompt, completion = stats.prompt_tokens, stats.completion_tokens
    reasoning, total, cached = stats.reasoning_tokens, stats.total_tokens, stats.cached_tokens
    if total is not None:
        for name, value in (
            ("prompt_tokens", prompt),
            ("completion_tokens", completion),
            ("reasoning_tokens", reasoning),
            ("cached_tokens", cached),
        ):
            if value is not None and value > total:
                raise TrajectoryError(
                    path, f"model-call {name} {value} exceeds total_tokens {total}"
                )
        if prompt is not None and completion is not None and prompt + completion > total:
            raise TrajectoryError(
                path, "model-call prompt_tokens plus completion_tokens exceeds total_tokens"
            )
    if cached is not None and prompt is not None and cached > prompt:
        raise TrajectoryError(
            path, "model-call cached_tokens exceeds prompt_tokens; cached tokens must be a subset"
        )
    if reasoning is not None and completion is not None and reasoning > completion:
        raise TrajectoryError(
            path,
            "model-call reasoning_tokens exceeds completion_tokens; reasoning tokens must be a subset",
        )
    if all(value is None for value in (prompt, completion, reasoning, total, cached)):
        return None
    metrics: dict[str, Any] = {
        name: value
        for name, value in (
            ("prompt_tokens", prompt),
            ("completion_tokens", completion),
            ("cached_tokens", cached),
        )
        if value is not None
    }
    extra = {
        name: value
        for name, value in (("reasoning_tokens", reasoning), ("total_tokens", total))
        if value is not None
    }
    if extra:
        metrics["extra"] = extra
    return metrics


def _final_metrics(groups: list[AgentGroup], total_steps: int) -> dict[str, Any]:
    metrics = [group.step.metrics for group in groups]

    def total(name: str) -> int | None:
        if not metrics or any(metric is None for metric in metrics):
            return None
        values: list[int | None] = [metric.get(name) for metric in metrics if metric is not None]
        counted = [value for value in values if value is not None]
        return sum(counted) if len(counted) == len(values) else None

    final: dict[str, Any] = {}
    for key, name in (
        ("total_prompt_tokens", "prompt_tokens"),
        ("total_completion_tokens", "completion_tokens"),
        ("total_cached_tokens", "cached_tokens"),
    ):
        if (value := total(name)) is not None:
            final[key] = value
    final["total_steps"] = total_steps
    return final
