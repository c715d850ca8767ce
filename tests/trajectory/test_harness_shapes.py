"""The harness shapes of Gym's trajectory acceptance fixture, with and without ``+relax``.

Gym's ``TrajectoryRecord`` accepts both records (checked under ``--with_gym``) and Gym's strict
exporter refuses both, as evalexport does by default. Each converts with exactly the
relaxations it needs, every one of them necessary, and nothing of the record is left out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import atif
import pytest

from evalexport.trajectory.convert import TrajectoryIdentity, convert_rollout
from evalexport.trajectory.steps import TrajectoryError
from tests.support.gym import GymOracle
from tests.support.harness_shapes import failed_trajectory, interleaved_trajectory
from tests.trajectory.parity import compare

IDENTITY = TrajectoryIdentity(session_id="s", agent_version="1.0")
SHAPES: dict[str, tuple[Callable[[str, str], dict[str, Any]], tuple[str, ...], str]] = {
    "interleaved": (
        interleaved_trajectory,
        ("easy_input_messages", "finish_reasons", "interleaved_tool_results", "turn_copies"),
        "ng_trajectory.invocations[0].conversation[0].type: "
        "expected a non-empty supported conversation item type",
    ),
    "failed": (
        failed_trajectory,
        ("easy_input_messages", "failures", "turn_copies"),
        "ng_trajectory.invocations[0].status: expected completed, got 'failed'",
    ),
}


def _row(shape: str, task: int = 0) -> dict[str, Any]:
    build = SHAPES[shape][0]
    return {
        "_ng_task_index": task,
        "_ng_rollout_index": 0,
        "agent_ref": {"type": "responses_api_agents", "name": "harness_agent"},
        "ng_trajectory": build(f"task-{task}", f"{shape}-{task}"),
    }


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_strict_export_refuses_the_shape_as_gym_does(shape: str) -> None:
    """The reason Gym gives comes first; every other reason follows (#58)."""
    with pytest.raises(TrajectoryError) as refused:
        convert_rollout(_row(shape), IDENTITY)
    path, detail = refused.value.reasons[0]
    assert f"{path}: {detail}" == SHAPES[shape][2]
    assert str(refused.value).startswith(SHAPES[shape][2])


def test_every_item_a_conversation_cannot_hold_is_named() -> None:
    with pytest.raises(TrajectoryError) as refused:
        convert_rollout(_row("interleaved"), IDENTITY)
    assert [path for path, _ in refused.value.reasons] == [
        "ng_trajectory.invocations[0].conversation[0].type",
        "ng_trajectory.invocations[0].conversation[5].type",
    ]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_shape_converts_with_exactly_its_relaxations_each_one_needed(shape: str) -> None:
    needed = SHAPES[shape][1]
    converted = convert_rollout(_row(shape), IDENTITY, relaxations=needed)
    assert converted.relaxations == needed
    assert converted.document["extra"]["nemo_gym"]["relaxations"] == list(needed)
    atif.Trajectory.model_validate(json.loads(converted.encode()))
    for missing in needed:
        with pytest.raises(TrajectoryError):
            convert_rollout(
                _row(shape), IDENTITY, relaxations=[name for name in needed if name != missing]
            )


def test_interleaved_results_make_one_step_and_the_differing_copies_are_kept() -> None:
    row = _row("interleaved")
    record = row["ng_trajectory"]
    steps = convert_rollout(row, IDENTITY, relaxations=SHAPES["interleaved"][1]).document["steps"]
    assert [step["source"] for step in steps] == ["user", "agent", "agent"]
    tools, answer = steps[1], steps[2]
    assert [call["function_name"] for call in tools["tool_calls"]] == ["north", "south"]
    assert [result["content"] for result in tools["observation"]["results"]] == [
        "north: 12",
        "south: 12",
    ]
    turns = record["turns"]
    assert tools["extra"]["nemo_gym"]["turn_copies"] == {
        "reasoning_content": turns[0]["reasoning_content"]
    }
    assert tools["extra"]["nemo_gym"]["turn"] == {"turn_no": 1, "step_count": 0}
    assert answer["message"] == "Both lists price it at 12."
    assert answer["extra"]["nemo_gym"]["turn_copies"] == {"question": turns[1]["question"]}
    assert "source_items" not in answer["extra"]["nemo_gym"]  # the easy-input answer has no id


def test_a_failed_run_keeps_each_failed_call_as_an_empty_agent_step_with_its_evidence() -> None:
    row = _row("failed")
    record = row["ng_trajectory"]
    document = convert_rollout(row, IDENTITY, relaxations=SHAPES["failed"][1]).document
    steps = document["steps"]
    assert [(step["source"], step["message"]) for step in steps] == [
        ("user", "Prove the lemma."),
        ("agent", ""),
        ("agent", ""),
    ]
    for step, call, turn in zip(steps[1:], record["model_calls"], record["turns"], strict=True):
        evidence = step["extra"]["nemo_gym"]
        assert evidence["model_call"]["response_metadata"] == call["response_metadata"]
        assert evidence["turn_copies"]["reasoning_content"] == turn["reasoning_content"]
    assert steps[2]["extra"]["nemo_gym"]["turn_copies"]["question"] == "Try again, step by step."
    source = document["extra"]["nemo_gym"]["source"]
    assert (source["invocation_status"], source["invocation_error_type"]) == (
        "failed",
        "GenerationError",
    )


@pytest.mark.gym
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_gyms_model_accepts_the_shape_and_its_exporter_refuses_it_as_evalexport_does(
    gym_oracle: GymOracle, tmp_path: Path, shape: str
) -> None:
    row = _row(shape)
    assert gym_oracle.record_error(row["ng_trajectory"]) is None
    rollouts = tmp_path / "harness_rollouts.jsonl"
    rollouts.write_text(json.dumps(row) + "\n", encoding="utf-8")
    comparison = compare(gym_oracle, rollouts, tmp_path / "work")
    assert not comparison.gym.succeeded
    assert comparison.disagreement() is None


def test_every_field_the_record_schema_refuses_is_named() -> None:
    row = _row("failed")
    row["ng_trajectory"]["task_id"] = 5
    row["ng_trajectory"]["invocations"][0]["status"] = 7
    with pytest.raises(TrajectoryError) as refused:
        convert_rollout(row, IDENTITY)
    assert [path for path, _ in refused.value.reasons] == [
        "ng_trajectory.task_id",
        "ng_trajectory.invocations[0].status",
    ]
