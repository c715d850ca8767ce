"""Hypothesis strategies: rollout files of NeMo Gym records, good and broken.

Every record starts as one Gym's simple agent writes (:class:`evalexport.testing.gym_shapes.
AgentRun`): multi-turn, parallel tool calls, reasoning as summary or content, multipart text,
model-call references with and without ``model_call_id``. A drawn *fault* then breaks it the way
real runs break (a failed tool, an HTTP 500 model call, an incomplete finish reason, an unknown
field, a coverage gap, ...) or leaves it whole. Edits to an item are applied to every copy of it
(conversation, turn copies, captured request and response), as a real producer would write them.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from evalexport.testing.factory import make_rollout, make_two_turn_rollout
from evalexport.testing.gym_shapes import AgentRun, ToolUse, input_message

AGENT = "simple_agent"

_words = st.text(
    alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "Zs", "S")),
    min_size=1,
    max_size=24,
).filter(lambda text: text.strip() != "")
_arguments = st.dictionaries(
    st.sampled_from(["code", "query", "top_k", "path", "flag"]),
    st.one_of(st.integers(-5, 10**6), _words, st.booleans(), st.floats(-1e6, 1e6, allow_nan=False)),
    max_size=3,
)


def _walk(value: Any, visit: Callable[[dict[str, Any]], None]) -> None:
    if isinstance(value, dict):
        visit(value)
        for item in value.values():
            _walk(item, visit)
    elif isinstance(value, list):
        for item in value:
            _walk(item, visit)


def edit_items(
    record: dict[str, Any], match: Callable[[dict[str, Any]], bool], **changes: Any
) -> None:
    """Apply ``changes`` to every dict in ``record`` that ``match`` accepts."""

    def visit(item: dict[str, Any]) -> None:
        if match(item):
            item.update(changes)

    _walk(record, visit)


FAULTS = (
    "failed_tool",
    "http_500",
    "incomplete_finish",
    "incomplete_invocation",
    "unknown_record_field",
    "unknown_item_field",
    "extra_row_field",
    "resolution_gap",
    "turns_gap",
    "encrypted_reasoning",
    "reasoning_in_both",
    "arguments_not_object",
    "answer_copy_differs",
    "integer_timestamp",
    "step_count_wrong",
    "tool_name_differs",
    "developer_prompt",
    "message_phase",
    "cached_over_prompt",
    "unknown_model_call",
    "easy_input_messages",
    "silent_reasoning",
    "truncated_answer",
    "empty_output",
    "stop_with_tool_calls",
    "interleaved_results",
    "reasoning_in_parts",
    "no_agent_ref",
)

RELAXATION_FOR_FAULT = {
    "developer_prompt": "developer_messages",
    "easy_input_messages": "easy_input_messages",
    "silent_reasoning": "empty_reasoning",
    "failed_tool": "failures",
    "http_500": "failures",
    "incomplete_finish": "failures",
    "incomplete_invocation": "failures",
    "truncated_answer": "failures",
    "empty_output": "failures",
    "stop_with_tool_calls": "finish_reasons",
    "interleaved_results": "interleaved_tool_results",
    "answer_copy_differs": "turn_copies",
    "arguments_not_object": "failures",
    "message_phase": "message_phases",
    "reasoning_in_parts": "reasoning_segments",
    "step_count_wrong": "turn_copies",
    "no_agent_ref": "unnamed_agents",
}
"""The faults a relaxation of the strict profile (``+relax``) lets through, and which one."""


@st.composite
def agent_runs(
    draw: st.DrawFn, task_index: int, rollout_index: int, fault: str | None = None
) -> dict[str, Any]:
    """One rollout row with ``fault`` applied (drawn when not given; "none" leaves it whole)."""
    prompt = []
    if draw(st.booleans()):
        prompt.append(input_message("system", draw(_words)))
    multipart = draw(st.booleans())
    prompt.append(
        input_message(
            "user", draw(st.lists(_words, min_size=1, max_size=2)) if multipart else draw(_words)
        )
    )
    if fault is None:
        fault = draw(st.just("none") | st.sampled_from(FAULTS))
    if fault == "developer_prompt":
        prompt.insert(0, input_message("developer", "Be brief."))
    run = AgentRun(str(task_index), f"{task_index}-{rollout_index}", prompt)
    tool_turns = draw(st.integers(0, 2))
    if fault in ("stop_with_tool_calls", "interleaved_results"):
        tool_turns = max(tool_turns, 1)
    for number in range(tool_turns + 1):
        last = number == tool_turns
        reasoning = draw(st.none() | _words)
        if fault in ("silent_reasoning", "reasoning_in_parts") and last:
            reasoning = "(edited)"  # edited below, in every copy
        common = {
            "reasoning": reasoning,
            "reasoning_as_summary": draw(st.booleans()),
            "with_model_call_id": draw(st.booleans()),
            "prompt_tokens": draw(st.integers(1, 5000)),
            "completion_tokens": draw(st.integers(130, 5000)),
            "cached_tokens": draw(st.none() | st.integers(0, 1)),
        }
        if number < tool_turns:
            names = draw(
                st.lists(
                    st.sampled_from(["python", "search", "lookup"]),
                    min_size=2 if fault == "interleaved_results" else 1,
                    max_size=3,
                )
            )
            tools = [ToolUse(name, draw(_arguments), draw(_words)) for name in names]
            if fault == "stop_with_tool_calls" and number == 0:
                reason = "stop"  # as some servers report a response that ends in tool calls
            else:
                reason = draw(st.sampled_from([None, "tool_calls"]))
            run.turn(tools=tools, finish_reason=reason, **common)
        elif fault == "truncated_answer":
            # The last call hit max_output_tokens: an incomplete message, an incomplete run.
            answer = draw(st.lists(_words, min_size=1, max_size=2))
            run.turn(answer=answer, finish_reason="length", response_status="incomplete", **common)
        elif fault == "empty_output":
            # The last call returned reasoning only, or nothing: Gym's simple agent stops there.
            run.turn(answered=False, response_status="incomplete", **common)
        else:
            answer = draw(st.lists(_words, min_size=1, max_size=2))
            run.turn(answer=answer, finish_reason=draw(st.sampled_from([None, "stop"])), **common)
    resolved = draw(st.booleans())
    record = run.record(resolved=None if fault == "resolution_gap" else resolved)
    row: dict[str, Any] = {
        "_ng_task_index": task_index,
        "_ng_rollout_index": rollout_index,
        "agent_ref": {"type": "responses_api_agents", "name": AGENT},
        "reward": float(resolved),
        "ng_trajectory": record,
    }
    _apply(fault, row, record, draw)
    return row


def _apply(fault: str, row: dict[str, Any], record: dict[str, Any], draw: st.DrawFn) -> None:
    tools = record["tool_calls"]
    calls = record["model_calls"]
    turns = record["turns"]
    invocation = record["invocations"][0]
    if fault == "failed_tool" and tools:
        target = draw(st.sampled_from(tools))
        target.update(status="failed", error_type="http_500")
    elif fault == "http_500":
        draw(st.sampled_from(calls))["response_metadata"].update(
            status_code=500, error_category="provider_error"
        )
    elif fault == "incomplete_finish":
        draw(st.sampled_from(calls))["response_metadata"]["finish_reason"] = draw(
            st.sampled_from(["length", "max_output_tokens", "content_filter"])
        )
    elif fault == "incomplete_invocation":
        invocation["status"] = "incomplete"
    elif fault == "unknown_record_field":
        draw(st.sampled_from([record, turns[0], calls[0], invocation]))["producer_note"] = "x"
    elif fault == "unknown_item_field":
        message_id = invocation["conversation"][-1].get("id")
        edit_items(
            record,
            lambda item: item.get("id") == message_id and item.get("type") == "message",
            audio=None,
        )
    elif fault == "extra_row_field":
        row["judge_verdict"] = {"score": 0.5, "notes": None}
    elif fault == "no_agent_ref":  # an older Gym row: it names no agent
        del row["agent_ref"]
    elif fault == "turns_gap":
        record["gaps"].append({"code": "turns_unavailable", "invocation_id": None, "detail": None})
    elif fault in ("encrypted_reasoning", "reasoning_in_both"):
        reasoning = [item for item in invocation["conversation"] if item.get("type") == "reasoning"]
        if reasoning:
            target_id = draw(st.sampled_from(reasoning))["id"]
            change = (
                {"encrypted_content": "gAAAAB"}
                if fault == "encrypted_reasoning"
                else {
                    "summary": [{"text": "a", "type": "summary_text"}],
                    "content": [{"text": "b", "type": "reasoning_text"}],
                }
            )
            edit_items(record, lambda item: item.get("id") == target_id, **change)
    elif fault == "arguments_not_object":
        function_calls = [
            item for item in invocation["conversation"] if item.get("type") == "function_call"
        ]
        if function_calls:
            call_id = draw(st.sampled_from(function_calls))["call_id"]
            arguments = draw(st.sampled_from(["[1, 2]", "not json", '{"a": 1, "a": 2}', "1e400"]))
            edit_items(
                record,
                lambda item: item.get("call_id") == call_id and "arguments" in item,
                arguments=arguments,
            )
    elif fault == "answer_copy_differs":
        turns[-1]["answer"] = json.loads(json.dumps(turns[-1]["answer"]))
        turns[-1]["answer"][0]["content"][0]["text"] += " (edited)"
    elif fault == "integer_timestamp":
        for turn in turns:
            turn["timestamp"] = int(turn["timestamp"])
    elif fault == "step_count_wrong":
        draw(st.sampled_from(turns))["step_count"] += 1
    elif fault == "tool_name_differs" and tools:
        draw(st.sampled_from(tools))["tool_name"] = "other_tool"
    elif fault == "message_phase":
        message_id = invocation["conversation"][-1].get("id")
        edit_items(record, lambda item: item.get("id") == message_id, phase="final_answer")
    elif fault == "cached_over_prompt":
        stats = draw(st.sampled_from(calls))["token_stats"]
        stats["cached_tokens"] = stats["prompt_tokens"] + 1
    elif fault == "interleaved_results":
        # A producer that records each tool's result right after its call, in every copy.
        for items in [invocation["conversation"], *(turn["question"] for turn in turns)]:
            _interleave(items)
    elif fault in ("truncated_answer", "empty_output"):
        invocation["status"] = "incomplete"
    elif fault == "easy_input_messages":
        # A producer that writes input messages in the easy-input form: no type, no phase.
        for item in [*invocation["conversation"], *(i for t in turns for i in t["question"])]:
            if item.get("role") in ("system", "user"):
                item.pop("type", None)
                item.pop("phase", None)
    elif fault in ("silent_reasoning", "reasoning_in_parts"):
        # The last turn's reasoning: no text at all, or a summary in two parts (as OpenAI
        # reasoning models write summaries).
        parts = [] if fault == "silent_reasoning" else [draw(_words), draw(_words)]
        edit_items(
            record,
            lambda item: item.get("type") == "reasoning" and item["id"].endswith(f"_{len(turns)}"),
            summary=[{"text": text, "type": "summary_text"} for text in parts],
            content=None,
        )
    elif fault == "unknown_model_call":
        turns[0]["model_calls"] = [
            {"model_call_id": "mc_missing", "model_ref": None, "response_id": None}
        ]


def _interleave(items: list[dict[str, Any]]) -> None:
    """Reorder each run of function calls followed by their results into call, result pairs."""
    position = 0
    while position < len(items):
        end = position
        while end < len(items) and items[end].get("type") == "function_call":
            end += 1
        calls = items[position:end]
        results = {item["call_id"]: item for item in items[end : end + len(calls)]}
        if len(calls) > 1 and len(results) == len(calls):
            items[position : end + len(calls)] = [
                item for call in calls for item in (call, results[call["call_id"]])
            ]
            end += len(calls)
        position = max(end, position + 1)


@st.composite
def rollout_files(draw: st.DrawFn, fault: str | None = None) -> list[str]:
    """The lines of a rollouts file: rows, sometimes a duplicate key, a second agent, a bad line.

    With ``fault`` given, the first row carries that fault and the file is otherwise whole.
    """
    count = draw(st.integers(1, 3))
    keys = draw(
        st.lists(
            st.tuples(st.integers(0, 50), st.integers(0, 3)),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    lines = [
        json.dumps(
            draw(agent_runs(task, rollout, fault if position == 0 else None)),
            ensure_ascii=draw(st.booleans()),
        )
        for position, (task, rollout) in enumerate(keys)
    ]
    if fault is not None:
        return lines
    file_fault = draw(
        st.just("none")
        | st.sampled_from(["duplicate", "second_agent", "blank", "bad_json", "bad_number"])
    )
    if file_fault == "duplicate":
        lines.append(lines[0])
    elif file_fault == "second_agent":
        row = json.loads(lines[-1])
        row["agent_ref"] = {"type": "responses_api_agents", "name": "other_agent"}
        row["_ng_task_index"] = 999
        lines.append(json.dumps(row))
    elif file_fault == "blank":
        lines.insert(draw(st.integers(0, len(lines))), "")
    elif file_fault == "bad_json":
        lines.insert(draw(st.integers(0, len(lines))), lines[0][: len(lines[0]) // 2])
    elif file_fault == "bad_number":
        position = draw(st.integers(0, len(lines) - 1))
        number = draw(st.sampled_from(["1e400", "0.1000000000000000055511151231257827", "NaN"]))
        lines[position] = lines[position].replace('"reward": ', f'"reward": {number}, "r0": ', 1)
    return lines


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["", "x", "user", "message"]),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.just("type"), inner, max_size=1),
    max_leaves=3,
)


@st.composite
def rows_broken_anywhere(draw: st.DrawFn) -> dict[str, Any]:
    """A factory row with up to three keys of its record set to any JSON value."""
    rng = random.Random(draw(st.integers(0, 5)))
    two_turn = draw(st.booleans())
    row = make_two_turn_rollout(rng, 0, 1) if two_turn else make_rollout(rng, 0, 0, "tool_agent")
    places: list[dict[str, Any]] = []
    _walk(row["ng_trajectory"], places.append)
    for _ in range(draw(st.integers(1, 3))):
        place = draw(st.sampled_from(places))
        key = draw(st.sampled_from([*sorted(place), "role", "status", "type", "content"]))
        place[key] = copy.deepcopy(draw(_JSON_VALUES))
    return row
