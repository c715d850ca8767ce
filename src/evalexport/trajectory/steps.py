"""ATIF steps from an invocation's conversation, the way NeMo Gym's strict exporter builds them.

The conversation is read in order. System and user messages before the first agent output each
become a step of their own. Then every agent output is one ``agent`` step: optional reasoning,
followed either by an assistant message or by a run of function calls whose results (all of
them, nothing else) follow at once. The prefix of the conversation before each agent step is
kept: the turn for that step must hold the same items as its ``question``.

Where the strict profile refuses, :class:`StepBuilder` asks its :class:`.Relaxations` first:
an opted-in relaxation (``+relax``) lets the row through and is recorded as used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from evalexport.trajectory.conversation import Item, read_items
from evalexport.trajectory.record import InvocationRecord, ToolCallRecord
from evalexport.trajectory.relaxations import Relaxations
from evalexport.trajectory.step_model import (
    REASONING_SEPARATOR,
    AgentGroup,
    Reason,
    Step,
    TrajectoryError,
    reasoning_segments,
    said,
    text_content,
)
from evalexport.trajectory.strict_json import json_equal, loads_strict

__all__ = [
    "AgentGroup",
    "Reason",
    "Step",
    "StepBuilder",
    "TrajectoryError",
    "reasoning_segments",
    "said",
    "text_content",
]


def _unfinished_status(item: Item, relax: Relaxations) -> str:
    """A message's status other than ``completed`` (the caller checks that it is), refused
    unless ``failures`` is relaxed."""
    status = item.canonical["status"]
    if not relax.permits("failures"):
        raise TrajectoryError(f"{item.path}.status", f"expected completed, got {status!r}")
    return str(status)


def _message_content(item: Item) -> str | list[dict[str, object]]:
    if item.kind == "output_message" and not item.canonical.get("content"):
        raise TrajectoryError(f"{item.path}.content", "expected at least one output_text part")
    return text_content(item.canonical.get("content"), f"{item.path}.content")


def _arguments(call: Item, path: str, relax: Relaxations) -> dict[str, object] | None:
    """A function call's arguments as an object; ``None`` for arguments that are not a JSON
    object when ``failures`` is relaxed (a model that wrote malformed arguments)."""
    try:
        arguments = loads_strict(call.canonical["arguments"])
    except ValueError:  # json.JSONDecodeError and StrictJsonError are both ValueErrors
        if relax.permits("failures"):
            return None
        raise TrajectoryError(f"{path}.arguments", "expected a JSON object string") from None
    if not isinstance(arguments, dict):
        if relax.permits("failures"):
            return None
        raise TrajectoryError(f"{path}.arguments", "expected a JSON object")
    return arguments


_TOOL_TIMING: Final = ("sandbox_id", "started_at", "completed_at", "duration_ms", "timing_source")
"""The tool record's fields a tool result keeps as evidence, in the record's field order."""


def _tool_result_extra(
    record: ToolCallRecord, source_item_id: str | None, source_item_status: str | None
) -> dict[str, object] | None:
    # What model_dump(mode="json", include=..., exclude_none=True) gives: these fields are
    # strings and floats, already JSON values.
    source = {name: value for name in _TOOL_TIMING if (value := getattr(record, name)) is not None}
    if record.status != "completed":  # kept with ``failures`` relaxed
        source["status"] = record.status
    if record.error_type is not None:
        source["error_type"] = record.error_type
    if source_item_id is not None:
        source["source_item_id"] = source_item_id
    if source_item_status is not None:
        source["source_item_status"] = source_item_status
    return {"nemo_gym": source} if source else None


class StepBuilder:
    """Reads an invocation's conversation into ATIF steps and the agent groups behind them.

    ``relax`` holds the relaxations of the strict profile the row may use; each refusal it
    relaxes is recorded there as used. ``turn_answers`` are the turns' ``answer`` copies, in
    order: with ``interleaved_tool_results`` relaxed, they tell which function calls one model
    response made when the conversation interleaves their results.
    """

    def __init__(
        self,
        invocation: InvocationRecord,
        tool_records: list[ToolCallRecord],
        relax: Relaxations | None = None,
        turn_answers: Sequence[object] = (),
    ) -> None:
        self.invocation = invocation
        self.relax = relax if relax is not None else Relaxations()
        self.turn_answers = turn_answers
        self.path = "ng_trajectory.invocations[0].conversation"
        self.items = read_items(invocation.conversation, self.path, self.relax)
        self.tools = {record.tool_call_id: record for record in tool_records}
        if len(self.tools) != len(tool_records):
            raise TrajectoryError("ng_trajectory.tool_calls", "tool_call_id values must be unique")
        self.used_tool_ids: set[str] = set()
        self.steps: list[Step] = []
        self.groups: list[AgentGroup] = []
        self.prefix: list[Item] = []
        self.position = 0

    def _peek(self, kind: str) -> Item | None:
        if self.position < len(self.items) and self.items[self.position].kind == kind:
            return self.items[self.position]
        return None

    def _take(self, kind: str) -> list[Item]:
        taken: list[Item] = []
        while (item := self._peek(kind)) is not None:
            taken.append(item)
            self.prefix.append(item)
            self.position += 1
        return taken

    def build(self) -> tuple[list[Step], list[AgentGroup]]:
        """The steps of the conversation and the agent groups its turns are checked against."""
        while self.position < len(self.items):
            item = self.items[self.position]
            if item.kind in ("input_message", "assistant_context"):
                self._source_message(item)
            else:
                self._agent_step(item)
        unused = set(self.tools) - self.used_tool_ids
        if unused:
            raise TrajectoryError(
                "ng_trajectory.tool_calls", f"unreferenced tool executions: {sorted(unused)}"
            )
        if not self.steps:  # ATIF's trajectory holds one step at least: there is none to hold
            raise TrajectoryError(self.path, "is empty: the row recorded no conversation")
        if not self.groups and not self.relax.permits("failures"):
            raise TrajectoryError(self.path, "contains no agent output")
        return self.steps, self.groups

    def add_unanswered_step(self) -> None:
        """An agent step for a model call that answered nothing (``failures`` relaxed): an
        empty message after the whole conversation, its evidence coming from its turn."""
        step = Step(len(self.steps) + 1, "agent", "")
        self.steps.append(step)
        self.groups.append(AgentGroup(list(self.prefix), [], [], step))

    def _source_message(self, item: Item) -> None:
        role = item.canonical["role"]
        facts: dict[str, object] = {}
        if role == "developer":
            if not self.relax.permits("developer_messages"):
                raise TrajectoryError(f"{item.path}.role", "developer messages are not supported")
            role, facts["source_role"] = "system", "developer"
        if item.kind == "assistant_context":
            raise TrajectoryError(f"{item.path}.role", "copied assistant context is not supported")
        if self.groups and not self.relax.permits("later_turns"):
            raise TrajectoryError(item.path, "later system or user turns are not supported")
        if item.canonical.get("status") not in (None, "completed"):
            facts["message_status"] = _unfinished_status(item, self.relax)
        if (phase := item.canonical.get("phase")) is not None:  # ``message_phases`` relaxed
            facts["message_phase"] = phase
        step = Step(len(self.steps) + 1, role, _message_content(item))
        if facts:
            step.extra = {"nemo_gym": facts}
        self.steps.append(step)
        self.prefix.append(item)
        self.position += 1

    def _agent_step(self, first: Item) -> None:
        path = first.path
        question = list(self.prefix)
        reasoning = self._take("reasoning")
        step_id = len(self.steps) + 1
        message_status = None
        if self.position >= len(self.items) or (
            reasoning and self.items[self.position].kind == "input_message"
        ):
            if not self.relax.permits("failures"):
                raise TrajectoryError(path, "reasoning is not followed by an agent answer")
            calls, answer = [], []
            # The model stopped after reasoning: the conversation ends, or the environment
            # spoke next (an aviary agent's environment observing a step without an action).
            step = Step(step_id, "agent", "")
        elif calls := self._take_calls():
            outputs = self._take("function_call_output")
            while self._peek("function_call") is not None and self._continues_response(calls):
                calls.extend(self._take_calls())
                outputs.extend(self._take("function_call_output"))
            step = self._tool_step(step_id, calls, outputs, path)
            answer = calls
        elif (message := self._peek("output_message")) is not None:
            self.prefix.append(message)
            self.position += 1
            if message.canonical.get("status") not in (None, "completed"):
                message_status = _unfinished_status(message, self.relax)
            step = Step(step_id, "agent", _message_content(message))
            answer = [message]
        else:
            current = self.items[self.position]
            raise TrajectoryError(path, f"unsupported conversation item {current.kind!r} here")
        segments = reasoning_segments(reasoning, f"{path}.reasoning", self.relax)
        if segments:
            step.reasoning_content = (
                segments[0] if len(segments) == 1 else REASONING_SEPARATOR.join(segments)
            )
        self.steps.append(step)
        group = AgentGroup(question, reasoning, answer, step, tool_call_count=len(calls))
        if reasoning:
            group.source_items["reasoning_ids"] = [item.canonical.get("id") for item in reasoning]
        if len(segments) > 1:  # ``reasoning_segments`` relaxed: the boundaries, kept
            group.source_items["reasoning_segment_lengths"] = [len(text) for text in segments]
        if not calls and answer:
            message_id = answer[0].canonical.get("id")
            if message_id is not None:  # an easy-input answer has none
                group.source_items["message_id"] = message_id
            if message_status is not None:
                group.source_items["message_status"] = message_status
            if (phase := answer[0].canonical.get("phase")) is not None:  # ``message_phases``
                group.source_items["message_phase"] = phase
        self.groups.append(group)

    def _take_calls(self) -> list[Item]:
        calls: list[Item] = []
        while (call := self._peek("function_call")) is not None:
            if not call.canonical["call_id"].strip():
                raise TrajectoryError(f"{call.path}.call_id", "cannot be empty")
            if not call.canonical["name"].strip():
                raise TrajectoryError(f"{call.path}.name", "cannot be empty")
            status = call.canonical.get("status")
            if status not in (None, "completed") and not self.relax.permits("failures"):
                raise TrajectoryError(f"{call.path}.status", f"expected completed, got {status!r}")
            if call.canonical["call_id"] in self.used_tool_ids:
                raise TrajectoryError(
                    call.path, f"duplicate function call ID {call.canonical['call_id']!r}"
                )
            self.used_tool_ids.add(call.canonical["call_id"])
            calls.append(call)
            self.prefix.append(call)
            self.position += 1
        return calls

    def _continues_response(self, calls: list[Item]) -> bool:
        """Whether the next function call belongs to the same model response as ``calls``,
        its results interleaved: the turn of this step names it among its answer's calls and
        ``interleaved_tool_results`` is relaxed."""
        following = self.items[self.position]  # a function call: the caller peeked
        turn = len(self.groups)
        if turn >= len(self.turn_answers):
            return False
        answer = self.turn_answers[turn]
        expected = {
            item.get("call_id")
            for item in (answer if isinstance(answer, list) else ())
            if isinstance(item, dict) and item.get("type") == "function_call"
        }
        taken = {call.canonical["call_id"] for call in calls}
        return (
            taken < expected
            and following.canonical["call_id"] in expected - taken
            and self.relax.permits("interleaved_tool_results")
        )

    def _tool_step(
        self, step_id: int, calls: list[Item], result_items: list[Item], path: str
    ) -> Step:
        outputs: dict[str, Item] = {}
        for output in result_items:
            call_id = output.canonical["call_id"]
            if call_id in outputs:
                raise TrajectoryError(path, f"duplicate function result ID {call_id!r}")
            status = output.canonical.get("status")
            if status not in (None, "completed") and not self.relax.permits("failures"):
                raise TrajectoryError(path, f"function result {call_id!r} is {status!r}")
            outputs[call_id] = output
        expected = {call.canonical["call_id"] for call in calls}
        unanswered = expected - set(outputs)  # the episode ended on them, or ran only some
        if set(outputs) - expected or (unanswered and not self.relax.permits("unanswered_calls")):
            raise TrajectoryError(
                path,
                "function results must match this turn's calls exactly; expected "
                f"{sorted(expected)}, got {sorted(outputs)}",
            )
        tool_calls: list[dict[str, object]] = []
        records: dict[str, ToolCallRecord] = {}
        contents: dict[str, object] = {}
        for call in calls:
            call_id = call.canonical["call_id"]
            if call_id not in unanswered:
                record = self._tool_record(call, path)
                output = outputs[call_id]
                contents[call_id] = text_content(
                    output.canonical["output"], f"{path}.tool_results[{call_id!r}].output"
                )
                if record.output is not None and not json_equal(
                    record.output, output.canonical["output"]
                ):
                    raise TrajectoryError(
                        path, f"tool execution {call_id!r} has a different recorded output"
                    )
                records[call_id] = record
            arguments = _arguments(call, call.path, self.relax)
            tool_call: dict[str, object] = {
                "tool_call_id": call_id,
                "function_name": call.canonical["name"],
                "arguments": {} if arguments is None else arguments,
            }
            source: dict[str, object] = {}
            if call.canonical.get("id") is not None:
                source["source_item_id"] = call.canonical.get("id")
            # What ``failures`` lets through, kept:
            if (status := call.canonical.get("status")) not in (None, "completed"):
                source["source_item_status"] = status
            if arguments is None:
                source["arguments_text"] = call.canonical["arguments"]
            if call_id in unanswered:  # ``unanswered_calls``: a call, and no result for it
                source["recorded_output"] = None
            if source:
                tool_call["extra"] = {"nemo_gym": source}
            tool_calls.append(tool_call)
        results = []
        for output in outputs.values():
            call_id = output.canonical["call_id"]
            result: dict[str, object] = {"source_call_id": call_id, "content": contents[call_id]}
            status = output.canonical.get("status")
            extra = _tool_result_extra(
                records[call_id],
                output.canonical.get("id"),
                status if status not in (None, "completed") else None,
            )
            if extra is not None:
                result["extra"] = extra
            results.append(result)
        observation = {"results": results} if results else None
        return Step(step_id, "agent", "", tool_calls=tool_calls, observation=observation)

    def _tool_record(self, call: Item, path: str) -> ToolCallRecord:
        call_id = call.canonical["call_id"]
        record = self.tools.get(call_id)
        if record is None:
            raise TrajectoryError(path, f"missing tool execution record for {call_id!r}")
        if record.invocation_id != self.invocation.invocation_id:
            raise TrajectoryError(path, f"tool execution {call_id!r} belongs to another invocation")
        if record.status != "completed" and not self.relax.permits("failures"):
            raise TrajectoryError(
                path, f"tool execution {call_id!r} is {record.status!r}, not completed"
            )
        if record.error_type is not None and not self.relax.permits("failures"):
            raise TrajectoryError(
                path, f"completed tool execution {call_id!r} records error {record.error_type!r}"
            )
        if record.tool_name is not None and record.tool_name != call.canonical["name"]:
            raise TrajectoryError(
                path,
                f"tool execution {call_id!r} records tool {record.tool_name!r}, "
                f"the call names {call.canonical['name']!r}",
            )
        return record
