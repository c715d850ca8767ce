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
    }
