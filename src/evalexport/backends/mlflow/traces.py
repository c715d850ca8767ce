"""Each rollout as an MLflow trace (``+traces=true``, docs/exporters/mlflow.md, "Traces").

A rollout's agent loop is the conversation it records, in the OpenAI Responses format Gym's
agents speak: ``ng_trajectory``'s conversation when the row has one (with the times its model
calls and tool calls recorded), else ``responses_create_params.input`` then
``response.output``. It becomes one trace: a root ``AGENT`` span whose inputs are the messages
the agent was given and whose output is its final answer, and under it, in order, an ``LLM``
span for each model turn (its reasoning, message and tool calls; inputs: what was new to the
model, the prompt or the tool results) and a ``TOOL`` span for each tool call (its arguments,
its output). The trace's tags are the task index, rollout index, agent and reward, so a user
searches traces by reward; the root span carries the response's token usage as MLflow's UI
reads it. Spans take the rollout's own timestamps when ``ng_trajectory`` records them; a row
without any is laid out from the export's moment, one millisecond a span, and says so.

The traces are written while the rollouts are read (one pass), one JSON line each, masked as
every other file the export sends, and the worker streams them line by line: memory stays flat
however many rollouts there are.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from evalexport import Rollout
from evalexport.backends.mlflow.worker import MlflowSpan, MlflowTrace
from evalexport.spec import Egress, PreparedRun
from evalexport.trajectory.from_conversation import recorded_output

__all__ = ["TRACES_FILE", "TracesFile", "trace_of", "traces_in"]

TRACES_FILE: Final = "traces.jsonl"
_MS: Final = 1_000_000
_INPUT_ROLES: Final = frozenset({"system", "developer", "user"})


_LAST_SECOND: Final = (2**63 - 1) // 1_000_000_000
"""The last second a span's time in nanoseconds can name (MLflow keeps it in 64 bits)."""


def _seconds_ns(value: object) -> int | None:
    """An epoch-seconds time as a span's nanoseconds; ``None`` when it names no such time."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= _LAST_SECOND:
        return int(value * 1_000_000_000)
    return None


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _is_given(item: object) -> bool:
    role = item.get("role") if isinstance(item, Mapping) else None
    return isinstance(role, str) and role in _INPUT_ROLES  # a list or an object is no role


def _conversation(record: Mapping[str, Any]) -> tuple[list[Any], Mapping[str, Any]]:
    """The rollout's items and its ``ng_trajectory`` (empty when it records none)."""
    trajectory = record.get("ng_trajectory")
    if isinstance(trajectory, Mapping):
        invocations = trajectory.get("invocations")
        if isinstance(invocations, list) and invocations and isinstance(invocations[0], Mapping):
            conversation = invocations[0].get("conversation")
            if isinstance(conversation, list):
                return conversation, trajectory
    request = record.get("responses_create_params")
    given = request.get("input") if isinstance(request, Mapping) else None
    if isinstance(given, str):
        given = [{"type": "message", "role": "user", "content": given}]
    return [
        *(given if isinstance(given, list) else []),
        *recorded_output(record.get("response")),
    ], {}


class _Clock:
    """Recorded times where the trajectory has them, else the export's moment onwards."""

    def __init__(self, trajectory: Mapping[str, Any]) -> None:
        calls = trajectory.get("model_calls")
        self.model_calls = [
            (_seconds_ns(call.get("started_at")), _seconds_ns(call.get("completed_at")))
            for call in (calls if isinstance(calls, list) else [])
            if isinstance(call, Mapping)
        ]
        tools = trajectory.get("tool_calls")
        self.tools = {
            str(call.get("tool_call_id")): (
                _seconds_ns(call.get("started_at")),
                _seconds_ns(call.get("completed_at")),
            )
            for call in (tools if isinstance(tools, list) else [])
            if isinstance(call, Mapping)
        }
        self.recorded = bool(self.model_calls)
        self.now = time.time_ns()
        self.last_end: int | None = None
        """When the latest span ended: the root's end."""

    def next(self) -> tuple[int, int]:
        start = self.now
        self.now += _MS
        self.last_end = max(self.last_end or 0, self.now)
        return start, self.now

    def span(self, recorded: tuple[int | None, int | None] | None) -> tuple[int, int]:
        if recorded is not None and recorded[0] is not None and recorded[1] is not None:
            end = max(recorded[0], recorded[1])
            self.last_end = max(self.last_end or 0, end)
            return recorded[0], end
        return self.next()


def _usage(record: Mapping[str, Any]) -> dict[str, int] | None:
    response = record.get("response")
    usage = response.get("usage") if isinstance(response, Mapping) else None
    if not isinstance(usage, Mapping):
        return None
    counts = {
        "input_tokens": usage.get("input_tokens"),
        "output_tokens": usage.get("output_tokens"),
        "total_tokens": usage.get("total_tokens"),
    }
    kept = {key: value for key, value in counts.items() if isinstance(value, int)}
    parts = [kept.get("input_tokens"), kept.get("output_tokens")]
    if not kept.get("total_tokens") and all(part is not None for part in parts):
        # Gym's rows record a total of 0 beside their counts; MLflow's UI shows the total.
        kept["total_tokens"] = sum(part for part in parts if part is not None)
    return kept or None


def trace_of(rollout: Rollout) -> MlflowTrace:
    """The trace of one rollout: its spans in order, its tags, its own times where recorded."""
    record = rollout.record
    items, trajectory = _conversation(record)
    clock = _Clock(trajectory if trajectory else {})
    if not clock.recorded:
        clock.tools = {}
    position = 0
    given = []
    while position < len(items) and _is_given(items[position]):
        given.append(items[position])
        position += 1
    spans: list[MlflowSpan] = []
    pending: dict[str, Any] | None = None  # the model turn being read
    new_inputs: list[Any] = list(given)
    calls: dict[str, Mapping[str, Any]] = {}
    answer = ""
    turn = 0
    start_ns: int | None = None

    def close_turn() -> None:
        nonlocal pending, new_inputs, start_ns
        if pending is None:
            return
        recorded = clock.model_calls[turn - 1] if turn - 1 < len(clock.model_calls) else None
        begun, ended = clock.span(recorded)
        start_ns = begun if start_ns is None else start_ns
        spans.append(
            {
                "name": f"model turn {turn}",
                "type": "LLM",
                "inputs": {"messages": new_inputs},
                "outputs": pending,
                "start_ns": begun,
                "end_ns": ended,
            }
        )
        pending, new_inputs = None, []

    for item in items[position:]:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type", "message")
        if kind == "function_call_output":
            close_turn()
            call_id = str(item.get("call_id"))
            call = calls.get(call_id, {})
            begun, ended = clock.span(clock.tools.get(call_id))
            start_ns = begun if start_ns is None else start_ns
            spans.append(
                {
                    "name": str(call.get("name") or "tool"),
                    "type": "TOOL",
                    "inputs": {"call_id": call_id, "arguments": call.get("arguments")},
                    "outputs": {"output": item.get("output")},
                    "start_ns": begun,
                    "end_ns": ended,
                }
            )
            new_inputs.append(item)
            continue
        if _is_given(item):  # a later user turn: new input for the next model turn
            close_turn()
            new_inputs.append(item)
            continue
        if pending is None:
            turn += 1
            pending = {}
        if kind == "reasoning":
            summary = item.get("summary")
            texts = [
                text
                for part in (summary if isinstance(summary, list) else [])
                if isinstance(part, Mapping) and (text := _text([part]))
            ]
            if texts:
                pending.setdefault("reasoning", []).extend(texts)
        elif kind == "function_call":
            calls[str(item.get("call_id"))] = item
            pending.setdefault("tool_calls", []).append(
                {"name": item.get("name"), "arguments": item.get("arguments")}
            )
        else:
            answer = _text(item.get("content"))
            pending["message"] = answer
    close_turn()
    if start_ns is not None and clock.last_end is not None:
        begun, ended = start_ns, clock.last_end
    else:
        begun, ended = clock.next()
    reward = record.get("reward")
    indices = {"task_index": rollout.task_index, "rollout_index": rollout.rollout_index}
    tags = {key: str(value) for key, value in indices.items() if value is not None}
    tags["agent"] = rollout.agent_name or ""
    if isinstance(reward, int | float) and not isinstance(reward, bool):
        tags["reward"] = repr(float(reward))
    attributes: dict[str, object] = {
        "evalexport.line": rollout.line_number,
        "evalexport.timestamps": "recorded"
        if clock.recorded
        else "not recorded: laid out from the export's moment",
    }
    if (usage := _usage(record)) is not None:
        attributes["mlflow.chat.tokenUsage"] = usage
    return {
        "name": f"rollout {rollout.task_index}-{rollout.rollout_index}"
        if None not in indices.values()
        else f"rollout at line {rollout.line_number}",  # a row of Gym's example files
        "tags": tags,
        "inputs": {"messages": given},
        "outputs": {"answer": answer},
        "attributes": attributes,
        "start_ns": begun,
        "end_ns": max(begun, ended),
        "spans": spans,
        "reward": float(reward) if isinstance(reward, int | float) and "reward" in tags else None,
    }


class TracesFile:
    """The traces of the rollouts fed to :meth:`rows`, one JSON line each, each through the
    export's gate (a trace holds a rollout's conversation: it is a row)."""

    def __init__(self, scratch: Path, gate: Egress) -> None:
        self.path = scratch / TRACES_FILE
        self.count = 0
        self._gate = gate

    def rows(self, rollouts: Iterator[Rollout]) -> Iterator[Rollout]:
        """The rollouts, passed on as they are, each one's trace written on the way."""
        with self.path.open("w", encoding="utf-8", errors="backslashreplace") as lines:
            for rollout in rollouts:
                text = json.dumps(trace_of(rollout), ensure_ascii=False, separators=(",", ":"))
                lines.write(self._gate.row(text, rollout.line_number) + "\n")
                self.count += 1
                yield rollout


def traces_in(prepared: PreparedRun) -> Path | None:
    """The traces :func:`~evalexport.tables.prepare.prepare` wrote while it read the run,
    if it was asked to."""
    return next(
        (found for directory in prepared.scratch if (found := directory / TRACES_FILE).is_file()),
        None,
    )
