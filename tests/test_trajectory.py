"""ng_trajectory -> ATIF conversion (SPEC §4), on hand-written realistic trajectories."""

from __future__ import annotations

import copy
import json
from typing import Any

import atif
import pytest

from evalexport.trajectory import TrajectoryError, TrajectoryIdentity, convert_rollout

IDENTITY = TrajectoryIdentity(session_id="aime24-run-7", agent_version="1.2.0")


def model_call(
    call_id: str,
    output: list[dict[str, Any]],
    *,
    prompt=1000,
    completion=50,
    cached=0,
    reasoning=None,
    system=None,
) -> dict[str, Any]:
    request_input = [{"role": "user", "content": "…"}]
    if system:
        request_input.insert(0, {"role": "system", "content": system})
    stats = {"prompt_tokens": prompt, "completion_tokens": completion, "cached_tokens": cached}
    if reasoning is not None:
        stats["reasoning_tokens"] = reasoning
    return {
        "model_call_id": call_id,
        "request": {"model": "m", "input": request_input},
        "response": {"output": output},
        "token_stats": stats,
        "response_metadata": {"model": "nvidia/nemotron-nano-9b-v2"},
    }


def function_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
    }


def text(value: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": value}],
    }


def tool_result(call_id: str, output: Any, status: str = "ok") -> dict[str, Any]:
    return {
        "tool_call_id": call_id,
        "invocation_id": "inv-1",
        "tool_name": "python",
        "output": output,
        "status": status,
        "started_at": "2026-11-01T10:00:01Z",
        "ended_at": "2026-11-01T10:00:02Z",
    }


def canonical_rollout() -> dict[str, Any]:
    """Two turns: the first with two model calls and two tool calls in one of them, the second
    with no tool call, a structured question and a structured answer."""
    return {
        "_ng_task_index": 3,
        "_ng_rollout_index": 1,
        "agent_ref": {"name": "scicode_agent"},
        "reward": 0.75,
        "response": {},
        "responses_create_params": {},
        "ng_trajectory": {
            "schema_version": "1.0",
            "task_id": "scicode/3",
            "rollout_id": "scicode/3/1",
            "invocations": [{"invocation_id": "inv-1"}],
            "turns": [
                {
                    "invocation_id": "inv-1",
                    "turn_no": 1,
                    "timestamp": "2026-11-01T10:00:00Z",
                    "question": "Intègre f(x) = x² — de 0 à 3 🙂",
                    "answer": "9",
                    "reasoning_content": "∫x² = x³/3, so 27/3.",
                    "model_calls": ["mc-1", "mc-2"],
                },
                {
                    "invocation_id": "inv-1",
                    "turn_no": 2,
                    "timestamp": "2026-11-01T10:01:00Z",
                    "question": {"follow_up": "and from 0 to 6?", "units": None},
                    "answer": {"value": 72, "exact": True},
                    "reasoning_content": None,
                    "model_calls": ["mc-3"],
                },
            ],
            "model_calls": [
                model_call(
                    "mc-1",
                    [
                        {
                            "type": "reasoning",
                            "summary": [{"type": "summary_text", "text": "Check with code."}],
                        },
                        function_call("call-a", "python", {"code": "print(3**3/3)"}),
                        function_call("call-b", "python", {"code": "import sympy"}),
                    ],
                    prompt=1200,
                    completion=80,
                    cached=0,
                    reasoning=40,
                    system="You are a careful mathematician.",
                ),
                model_call(
                    "mc-2",
                    [text("The integral is 9.")],
                    prompt=1500,
                    completion=30,
                    cached=1024,
                    reasoning=10,
                ),
                model_call("mc-3", [text("72")], prompt=1700, completion=20, cached=1400),
            ],
            "tool_calls": [
                tool_result("call-a", "9.0"),
                tool_result("call-b", {"error": "ModuleNotFoundError"}, "error"),
            ],
            "gaps": [],
        },
    }


def test_steps_are_system_user_agent_in_order_with_sequential_ids() -> None:
    trajectory = convert_rollout(canonical_rollout(), IDENTITY, "line 1")
    assert [(s.step_id, s.source) for s in trajectory.steps] == [
        (1, "system"),
        (2, "user"),
        (3, "agent"),
        (4, "agent"),
        (5, "user"),
        (6, "agent"),
    ]
    assert trajectory.steps[0].message == "You are a careful mathematician."
    assert trajectory.steps[1].message == "Intègre f(x) = x² — de 0 à 3 🙂"
    assert trajectory.steps[1].timestamp == "2026-11-01T10:00:00Z"


def test_an_agent_step_carries_its_tool_calls_and_their_results() -> None:
    step = convert_rollout(canonical_rollout(), IDENTITY, "line 1").steps[2]
    assert [(c.tool_call_id, c.function_name, c.arguments) for c in step.tool_calls] == [
        ("call-a", "python", {"code": "print(3**3/3)"}),
        ("call-b", "python", {"code": "import sympy"}),
    ]
    results = step.observation.results
    assert [(r.source_call_id, r.content) for r in results] == [
        ("call-a", "9.0"),
        ("call-b", '{"error": "ModuleNotFoundError"}'),
    ]
    assert results[1].extra["status"] == "error"
    assert step.reasoning_content == "Check with code."
    assert step.model_name == "nvidia/nemotron-nano-9b-v2"


def test_the_last_agent_step_of_a_turn_carries_the_answer_and_the_turns_reasoning() -> None:
    steps = convert_rollout(canonical_rollout(), IDENTITY, "line 1").steps
    assert steps[3].message == "9"
    assert steps[3].reasoning_content == "∫x² = x³/3, so 27/3."
    assert steps[3].tool_calls is None
    assert steps[3].observation is None


def test_non_string_questions_and_answers_become_json_text() -> None:
    steps = convert_rollout(canonical_rollout(), IDENTITY, "line 1").steps
    assert json.loads(steps[4].message) == {"follow_up": "and from 0 to 6?", "units": None}
    assert json.loads(steps[5].message) == {"value": 72, "exact": True}


def test_metrics_keep_cached_tokens_inside_prompt_tokens_and_total_up() -> None:
    trajectory = convert_rollout(canonical_rollout(), IDENTITY, "line 1")
    metrics = [s.metrics for s in trajectory.steps if s.source == "agent"]
    assert [(m.prompt_tokens, m.completion_tokens, m.cached_tokens) for m in metrics] == [
        (1200, 80, 0),
        (1500, 30, 1024),
        (1700, 20, 1400),
    ]
    assert metrics[0].extra == {"reasoning_tokens": 40}
    final = trajectory.final_metrics
    assert (
        final.total_prompt_tokens,
        final.total_completion_tokens,
        final.total_cached_tokens,
        final.total_steps,
    ) == (4400, 130, 2424, 6)


def test_reward_and_indices_go_in_extra_and_identity_in_the_root() -> None:
    trajectory = convert_rollout(canonical_rollout(), IDENTITY, "line 1")
    assert trajectory.schema_version == "ATIF-v1.7"
    assert trajectory.session_id == "aime24-run-7"
    assert trajectory.trajectory_id == "scicode/3/1"
    assert (trajectory.agent.name, trajectory.agent.version, trajectory.agent.model_name) == (
        "scicode_agent",
        "1.2.0",
        "nvidia/nemotron-nano-9b-v2",
    )
    assert trajectory.extra == {
        "reward": 0.75,
        "task_index": 3,
        "rollout_index": 1,
        "task_id": "scicode/3",
        "rollout_id": "scicode/3/1",
    }


def test_the_output_validates_against_the_atif_models() -> None:
    data = convert_rollout(canonical_rollout(), IDENTITY, "line 1").to_json_dict()
    assert atif.Trajectory.model_validate(data).to_json_dict() == data
    assert "reward" not in data  # ATIF has no reward field: it lives in extra


def test_the_agent_name_option_overrides_agent_ref() -> None:
    identity = TrajectoryIdentity(session_id="s", agent_version="1", agent_name="renamed")
    assert convert_rollout(canonical_rollout(), identity, "line 1").agent.name == "renamed"


def test_arguments_that_are_not_a_json_object_are_kept_verbatim_and_flagged() -> None:
    rollout = canonical_rollout()
    rollout["ng_trajectory"]["model_calls"][0]["response"]["output"][1]["arguments"] = (
        "{'code': broken"
    )
    call = convert_rollout(rollout, IDENTITY, "line 1").steps[2].tool_calls[0]
    assert call.arguments == {}
    assert call.extra == {"raw_arguments": "{'code': broken"}


def _broken(mutate) -> dict[str, Any]:
    rollout = copy.deepcopy(canonical_rollout())
    mutate(rollout["ng_trajectory"])
    return rollout


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda t: t["tool_calls"].append(tool_result("call-z", "orphan")),
            "tool calls call-z were run but no model call",
        ),
        (
            lambda t: t["turns"][0]["model_calls"].append("mc-404"),
            "turn 1 names model call 'mc-404'",
        ),
        (lambda t: t.update(schema_version="2.0"), "schema_version '2.0' is not supported"),
        (lambda t: t.update(turns=[]), "ng_trajectory has no turns"),
        (
            lambda t: t["model_calls"][1]["token_stats"].update(prompt_tokens=100),
            "1024 cached tokens out of 100 prompt tokens",
        ),
        (
            lambda t: t["model_calls"].append(copy.deepcopy(t["model_calls"][0])),
            "duplicate model_call_id 'mc-1'",
        ),
    ],
)
def test_what_cannot_be_placed_is_refused_naming_the_rollout(mutate, message: str) -> None:
    with pytest.raises(TrajectoryError, match=message) as error:
        convert_rollout(_broken(mutate), IDENTITY, "line 12")
    assert str(error.value).startswith("line 12: ")


def test_a_rollout_without_ng_trajectory_is_refused() -> None:
    rollout = canonical_rollout()
    del rollout["ng_trajectory"]
    with pytest.raises(TrajectoryError, match="line 3: the rollout has no ng_trajectory"):
        convert_rollout(rollout, IDENTITY, "line 3")
