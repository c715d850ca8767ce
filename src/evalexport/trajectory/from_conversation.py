"""A trajectory record built from the conversation a rollout row records, for rows without
``ng_trajectory`` (relaxation ``recorded_conversations``).

NeMo Gym's rollout observability, which writes ``ng_trajectory``, is off by default, so most
real runs hold none; every row still holds the agent loop in the OpenAI Responses format Gym's
agents speak: ``responses_create_params.input`` (the system and user turns it was given) and
``response.output`` (the agent's reasoning, messages and tool calls, and the tool outputs
that answered them). :func:`conversation_record` makes of them the ``ng_trajectory`` record
Gym would have written with no turns recorded (one root invocation, its conversation, a
completed tool execution per answered call), so that the one conversion
(:mod:`.from_record`, its conversation-only path) reads it: faithful or refused, an item it
does not know, a call without its output or an output without its call refused with the row's
own field path (:func:`row_path`), never dropped. :func:`conversation_source` is what the
trajectory says of where it came from: the response's id, status and model, its token usage
and the row's reward.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from evalexport.trajectory.steps import TrajectoryError

__all__ = [
    "INVOCATION_ID",
    "conversation_record",
    "conversation_source",
    "recorded_output",
    "row_path",
]

INVOCATION_ID: Final = "responses-conversation"
"""The one invocation of a trajectory built from the row's conversation."""
_OWN_PATHS: Final = (
    ("ng_trajectory.invocations[0].conversation", "response.output"),
    ("ng_trajectory.invocations[0].status", "response.status"),
    ("ng_trajectory.tool_calls", "response.output"),
)
"""Fields of the built record that are no single item of the row, as the row's own."""
_CONVERSATION_ITEM: Final = re.compile(r"^ng_trajectory\.invocations\[0\]\.conversation\[(\d+)\]")


def _items(row: Mapping[str, object]) -> tuple[list[object], list[object]]:
    request = row.get("responses_create_params")
    response = row.get("response")
    if not isinstance(request, Mapping):
        raise TrajectoryError(
            "responses_create_params", "missing: the row records no conversation to build from"
        )
    if not isinstance(response, Mapping):
        raise TrajectoryError("response", "missing: the row records no response to build from")
    given = request.get("input")
    if isinstance(given, str):  # the Responses API's text input: one user message
        given = [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": given}]}
        ]
    if not isinstance(given, list):
        raise TrajectoryError(
            "responses_create_params.input", "expected a list of Responses items or a text"
        )
    output = response.get("output")
    if not isinstance(output, list):
        raise TrajectoryError("response.output", "expected a list of Responses items")
    if _transitions(response):
        # Gym's aviary agent with return_transitions: the agent's input at each step, each a
        # prefix of the next; the last is the whole conversation.
        last = output[-1]
        for index, step in enumerate(output):
            if step != last[: len(step)]:
                raise TrajectoryError(
                    f"response.output[{index}]",
                    f"a transition that is not a prefix of the last (response.output[{len(output) - 1}])",
                )
        output = last
    return given, output


def _transitions(response: Mapping[str, object]) -> int:
    """How many transitions the response's output holds when it holds them (Gym's aviary
    agent's ``contains_transitions``: a list of lists), else 0."""
    output = response.get("output")
    if response.get("contains_transitions") is not True or not isinstance(output, list):
        return 0
    if not output or not all(isinstance(step, list) for step in output):
        return 0
    return len(output)


def recorded_output(response: object) -> list[Any]:
    """The output items a row's ``response`` records, read leniently (a table's columns, a
    trace): its ``output``, or the last of Gym's aviary transitions, which holds them all;
    ``[]`` when it records none. The conversion reads them strictly (:func:`conversation_record`)."""
    if not isinstance(response, Mapping) or not isinstance(output := response.get("output"), list):
        return []
    return output[-1] if _transitions(response) else output


def conversation_record(row: Mapping[str, object], task: int, rollout: int) -> dict[str, Any]:
    """The ``ng_trajectory`` record of the row's conversation: one root invocation holding the
    input items, then the output items, and a completed tool execution for each function call
    whose output the conversation holds (a call without one is refused by the conversion)."""
    given, output = _items(row)
    conversation = [*given, *output]
    answered = {
        item.get("call_id")
        for item in conversation
        if isinstance(item, Mapping) and item.get("type") == "function_call_output"
    }
    executions = [
        {
            "invocation_id": INVOCATION_ID,
            "tool_call_id": item["call_id"],
            "tool_name": item.get("name"),
            "status": "completed",
        }
        for item in conversation
        if isinstance(item, Mapping)
        and item.get("type") == "function_call"
        and isinstance(item.get("call_id"), str)
        and item["call_id"] in answered
        and isinstance(item.get("name"), str)
    ]
    response = row.get("response")
    status = response.get("status") if isinstance(response, Mapping) else None
    return {
        "schema_version": "1.0",
        "task_id": str(task),
        "rollout_id": str(rollout),
        "invocations": [
            {
                "invocation_id": INVOCATION_ID,
                "status": "completed" if status in (None, "completed") else "incomplete",
                "conversation": conversation,
            }
        ],
        "tool_calls": executions,
    }


def row_path(path: str, row: Mapping[str, object]) -> str:
    """A field path of the built record as the row's own: ``conversation[k]`` is the input's
    item ``k``, or the output's item ``k`` minus the input's length."""
    matched = _CONVERSATION_ITEM.match(path)
    if matched is None:
        for built, own in _OWN_PATHS:
            if path == built or path.startswith(built + "."):
                return own + path[len(built) :]
        return path
    given, _ = _items(row)
    index = int(matched.group(1))
    rest = path[matched.end() :]
    if index < len(given):
        return f"responses_create_params.input[{index}]{rest}"
    response = row.get("response")
    transitions = _transitions(response) if isinstance(response, Mapping) else 0
    output = f"response.output[{transitions - 1}]" if transitions else "response.output"
    return f"{output}[{index - len(given)}]{rest}"


def conversation_source(row: Mapping[str, object], task: int, rollout: int) -> dict[str, object]:
    """What a trajectory built from the row's conversation says of its source: the row's
    keys, the response's id, status and model, its token usage and the row's reward."""
    response = row.get("response")
    response = response if isinstance(response, Mapping) else {}
    source: dict[str, object] = {
        "format": "responses_conversation",
        "task_index": task,
        "rollout_index": rollout,
    }
    for key in ("id", "status", "model"):
        if isinstance(response.get(key), str):
            source[f"response_{key}"] = response[key]
    if isinstance(response.get("usage"), Mapping):
        source["usage"] = dict(response["usage"])
    if transitions := _transitions(response):  # the conversation is the last of them
        source["transitions"] = transitions
    reward = row.get("reward")
    if isinstance(reward, int | float) and not isinstance(reward, bool):
        source["reward"] = reward
    return source


def usage_metrics(row: Mapping[str, object]) -> dict[str, int]:
    """The response's token usage as ATIF's final metrics name it, where recorded."""
    response = row.get("response")
    usage = response.get("usage") if isinstance(response, Mapping) else None
    if not isinstance(usage, Mapping):
        return {}
    found: dict[str, int] = {}
    for key, name in (
        ("total_prompt_tokens", "input_tokens"),
        ("total_completion_tokens", "output_tokens"),
    ):
        value = usage.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            found[key] = value
    details = usage.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    if isinstance(cached, int) and not isinstance(cached, bool) and cached >= 0:
        found["total_cached_tokens"] = cached
    return found
