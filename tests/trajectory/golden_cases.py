"""The inputs of the golden files: fixed rollout files whose Gym output is committed.

``python -m tests.trajectory.make_golden GYM_PYTHON`` runs NeMo Gym's exporter on each case and
writes what it did under ``golden/<case>/``; ``test_golden.py`` holds evalexport to it without
Gym, and under ``--with_gym`` checks that the committed files are still what Gym writes.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from evalexport.testing.factory import make_rollout
from evalexport.testing.gym_shapes import AgentRun, ToolUse, input_message
from tests.trajectory.strategies import edit_items

AGENT = "aime24_math_tool_agent"


def _factory_rows(agent: str, tasks: int, repeats: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        make_rollout(rng, task, rollout, agent)
        for task in range(tasks)
        for rollout in range(repeats)
    ]


def _clean_row(task: int, name: str = AGENT) -> dict[str, Any]:
    run = AgentRun(
        str(task),
        f"{task}-0",
        [
            input_message("system", "Be exact."),
            input_message("user", ["Compute 6*7.", "Answer with a number."]),
        ],
    )
    run.turn(
        reasoning="Multiply.",
        tools=[
            ToolUse("python", {"code": "print(6*7)"}, "42"),
            ToolUse("lookup", {"q": "6*7"}, "42"),
        ],
        finish_reason="tool_calls",
        with_model_call_id=True,
    )
    run.turn(
        reasoning="Both say 42.", reasoning_as_summary=False, answer=["42"], finish_reason="stop"
    )
    return {
        "_ng_task_index": task,
        "_ng_rollout_index": 0,
        "agent_ref": {"type": "responses_api_agents", "name": name},
        "reward": 1.0,
        "ng_trajectory": run.record(resolved=True),
    }


def _faulted(task: int, fault: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    row = _clean_row(task)
    fault(row["ng_trajectory"])
    return row


def _failed_tool(record: dict[str, Any]) -> None:
    record["tool_calls"][1].update(status="failed", error_type="http_500")


def _http_500(record: dict[str, Any]) -> None:
    record["model_calls"][0]["response_metadata"].update(
        status_code=500, error_category="provider_error"
    )


def _length(record: dict[str, Any]) -> None:
    record["model_calls"][1]["response_metadata"]["finish_reason"] = "length"


def _incomplete(record: dict[str, Any]) -> None:
    record["invocations"][0]["status"] = "incomplete"


def _gap(record: dict[str, Any]) -> None:
    record["gaps"].append(
        {"code": "resolution_unavailable", "invocation_id": "root", "detail": None}
    )


def _unknown_field(record: dict[str, Any]) -> None:
    record["turns"][0]["latency_ms"] = 12


def _encrypted(record: dict[str, Any]) -> None:
    edit_items(
        record,
        lambda item: item.get("type") == "reasoning" and item.get("summary"),
        encrypted_content="gAAAA",
    )


def _arguments(record: dict[str, Any]) -> None:
    edit_items(
        record, lambda item: item.get("name") == "lookup" and "arguments" in item, arguments="[1]"
    )


def _minimal_row(task: int) -> dict[str, Any]:
    """A record written by hand with only the fields it needs, as Gym's own unit tests write
    them: no nulls, model calls named by ``model_call_id`` alone, a system message, and tool
    results arriving in the opposite order from the calls."""

    def reasoning(item_id: str, text: str) -> dict[str, Any]:
        return {
            "id": item_id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": text}],
        }

    def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": f"item-{call_id}",
            "type": "function_call",
            "call_id": call_id,
            "name": name,
            "arguments": json.dumps(arguments, sort_keys=True),
            "status": "completed",
        }

    def result(call_id: str, output: str) -> dict[str, Any]:
        return {
            "type": "function_call_output",
            "call_id": call_id,
            "output": output,
            "status": "completed",
        }

    system = {"type": "message", "role": "system", "content": "Use tools when needed."}
    user = {"type": "message", "role": "user", "content": "Compare the two records."}
    first, search, read = (
        reasoning("r1", "Read both."),
        call("c-search", "search", {"q": "x"}),
        call("c-read", "read", {"path": "/r"}),
    )
    second = reasoning("r2", "They agree.")
    answer = {
        "id": "m1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Same value.", "annotations": []}],
    }
    before_answer = [
        system,
        user,
        first,
        search,
        read,
        result("c-read", "record"),
        result("c-search", "results"),
    ]
    ids = {"task_id": f"task-{task}", "rollout_id": f"rollout-{task}"}
    model_ref = {"type": "responses_api_models", "name": "policy"}

    def turn(
        number: int, question: list[Any], reply: list[Any], thought: dict[str, Any], resolved: bool
    ) -> dict[str, Any]:
        return {
            "invocation_id": "root",
            **ids,
            "turn_no": number,
            "timestamp": 1_700_000_000.0 + 2 * number,
            "question": question,
            "answer": reply,
            "reasoning_content": [thought],
            "resolved": resolved,
            "step_count": 2,
            "model_calls": [{"model_call_id": f"mc{number}"}],
        }

    def tool(call_id: str, name: str, output: str, start: float) -> dict[str, Any]:
        return {
            "invocation_id": "root",
            "tool_call_id": call_id,
            "tool_name": name,
            "status": "completed",
            "started_at": start,
            "completed_at": start + 0.1,
            "duration_ms": 100.0,
            "timing_source": "executor",
            "output": output,
        }

    return {
        "_ng_task_index": task,
        "_ng_rollout_index": 0,
        "agent_ref": {"type": "responses_api_agents", "name": AGENT},
        "ng_trajectory": {
            "schema_version": "1.0",
            **ids,
            "invocations": [
                {
                    "invocation_id": "root",
                    "status": "completed",
                    "model_calls": [{"model_call_id": "mc1"}, {"model_call_id": "mc2"}],
                    "conversation": [*before_answer, second, answer],
                }
            ],
            "turns": [
                turn(1, [system, user], [search, read], first, False),
                turn(2, before_answer, [answer], second, True),
            ],
            "model_calls": [
                {
                    "model_call_id": "mc1",
                    "started_at": 1_700_000_000.0,
                    "completed_at": 1_700_000_000.045,
                    "duration_ms": 45.0,
                    "request": {"input": "in"},
                    "response": {"status": "completed", "output": "out"},
                    "response_metadata": {
                        "response_id": "resp-1",
                        "model_ref": model_ref,
                        "model": "model-a",
                        "dialect": "responses",
                        "status_code": 200,
                        "response_status": "completed",
                        "finish_reason": "tool_calls",
                        "latency_ttft_ms": 12.0,
                    },
                    "token_stats": {
                        "prompt_tokens": 101,
                        "completion_tokens": 11,
                        "reasoning_tokens": 7,
                        "total_tokens": 112,
                        "cached_tokens": 5,
                    },
                },
                {
                    "model_call_id": "mc2",
                    "duration_ms": 30.0,
                    "response_metadata": {
                        "response_id": "resp-2",
                        "model_ref": model_ref,
                        "model": "model-a",
                        "response_status": "completed",
                    },
                    "token_stats": {"reasoning_tokens": 9, "total_tokens": 9},
                },
            ],
            "tool_calls": [
                tool("c-read", "read", "record", 1_700_000_001.0),
                tool("c-search", "search", "results", 1_700_000_001.2),
            ],
            "gaps": [],
        },
    }


def _lines(rows: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(row, ensure_ascii=False) for row in rows]


def cases() -> dict[str, list[str]]:
    """Case name -> lines of its rollouts file."""
    faults = [
        _failed_tool,
        _http_500,
        _length,
        _incomplete,
        _gap,
        _unknown_field,
        _encrypted,
        _arguments,
    ]
    mixed = (
        [_clean_row(0)]
        + [_faulted(index + 1, fault) for index, fault in enumerate(faults)]
        + [_clean_row(20)]
    )
    duplicate = _clean_row(3)
    return {
        "tool_agent": _lines(_factory_rows(AGENT, tasks=3, repeats=2, seed=7)),
        "simple_agent": _lines(
            _factory_rows("aime24_math_simple_agent", tasks=4, repeats=1, seed=8)
        ),
        "hand_made": _lines([_clean_row(0), _clean_row(1)]),
        "faults": _lines(mixed),
        "duplicate_key_and_blank_line": [*_lines([duplicate]), "", *_lines([duplicate])],
        "two_agents": _lines([_clean_row(0), _clean_row(1, name="another_agent")]),
        "minimal_fields": _lines([_minimal_row(3), _minimal_row(4)]),
    }
