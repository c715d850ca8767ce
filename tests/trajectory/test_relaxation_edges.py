"""What the relaxations of the strict profile do not let through, and how bad names fail."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalexport.backends.atif.files import convert_file
from evalexport.testing.gym_shapes import AgentRun, input_message
from evalexport.trajectory.convert import TrajectoryIdentity, convert_rollout
from evalexport.trajectory.relaxations import RELAXATIONS, Relaxations
from evalexport.trajectory.steps import TrajectoryError
from tests.support.gym import GymOracle

IDENTITY = TrajectoryIdentity(session_id="s", agent_version="1.0")


def _row(prompt: list[dict[str, Any]]) -> dict[str, Any]:
    run = AgentRun("0", "0-0", prompt).turn(answer=["Done."], finish_reason="stop")
    return {
        "_ng_task_index": 0,
        "_ng_rollout_index": 0,
        "agent_ref": {"type": "responses_api_agents", "name": "simple_agent"},
        "ng_trajectory": run.record(resolved=True),
    }


def _null_type_row() -> dict[str, Any]:
    row = _row([input_message("user", "Hi.")])
    row["ng_trajectory"]["invocations"][0]["conversation"][0]["type"] = None
    return row


def _late_developer_row() -> dict[str, Any]:
    row = _row([input_message("user", "Hi.")])
    conversation = row["ng_trajectory"]["invocations"][0]["conversation"]
    conversation.append(input_message("developer", "Now be brief."))
    return row


def _string_question_row() -> dict[str, Any]:
    row = _row([input_message("user", "Hi.")])
    row["ng_trajectory"]["turns"][0]["question"] = "Hello?"
    return row


@pytest.mark.gym
def test_gyms_model_takes_these_rows_as_the_tests_here_assume(gym_oracle: GymOracle) -> None:
    """The null ``type`` is Gym's refusal too; the other rows are records Gym accepts."""
    assert gym_oracle.record_error(_null_type_row()["ng_trajectory"]) is not None
    for row in (_late_developer_row(), _string_question_row()):
        assert gym_oracle.record_error(row["ng_trajectory"]) is None


def _refusal(row: dict[str, Any]) -> str:
    with pytest.raises(TrajectoryError) as refused:
        convert_rollout(row, IDENTITY, relaxations=list(RELAXATIONS))
    return str(refused.value)


def test_a_message_whose_type_is_null_is_refused_even_relaxed() -> None:
    """Gym's EasyInputMessage may leave ``type`` out but refuses ``null`` there."""
    assert _refusal(_null_type_row()) == (
        "ng_trajectory.invocations[0].conversation[0].type: "
        "expected a non-empty supported conversation item type"
    )


def test_a_developer_message_after_the_agent_answered_needs_later_turns_too() -> None:
    """Refused with every other relaxation; with ``later_turns`` a system step in its place
    (#58: game environments answer as later turns)."""
    others = [name for name in RELAXATIONS if name != "later_turns"]
    with pytest.raises(TrajectoryError) as refused:
        convert_rollout(_late_developer_row(), IDENTITY, relaxations=others)
    assert str(refused.value) == (
        "ng_trajectory.invocations[0].conversation[2]: later system or user turns are not supported"
    )
    converted = convert_rollout(_late_developer_row(), IDENTITY, relaxations=list(RELAXATIONS))
    assert converted.relaxations == ("developer_messages", "later_turns")
    steps = converted.document["steps"]
    assert [step["source"] for step in steps][-1] == "system"
    assert steps[-1]["extra"] == {"nemo_gym": {"source_role": "developer"}}


def test_a_relaxation_is_recorded_only_where_a_row_needed_it() -> None:
    with_developer = _row([input_message("developer", "Be brief."), input_message("user", "Hi.")])
    converted = convert_rollout(with_developer, IDENTITY, relaxations=list(RELAXATIONS))
    assert converted.relaxations == ("developer_messages",)


def test_an_unknown_relaxation_fails_before_any_row_naming_the_known_ones(tmp_path) -> None:
    rollouts = tmp_path / "r_rollouts.jsonl"
    rollouts.write_text(json.dumps(_row([input_message("user", "Hi.")])) + "\n")
    with pytest.raises(ValueError, match="unknown relaxations developer_prompts; known: "):
        convert_file(rollouts, IDENTITY, output=None, relaxations=["developer_prompts"])
    with pytest.raises(ValueError, match="developer_messages, easy_input_messages"):
        Relaxations(["failure"])


def test_a_turn_copy_kept_verbatim_counts_no_relaxation_its_reading_needed() -> None:
    """A string question that differs from the conversation is kept as it is: reading it as
    an easy-input message was not needed, so only ``turn_copies`` is recorded."""
    converted = convert_rollout(_string_question_row(), IDENTITY, relaxations=list(RELAXATIONS))
    assert converted.relaxations == ("turn_copies",)
    evidence = converted.document["steps"][1]["extra"]["nemo_gym"]
    assert evidence["turn_copies"] == {"question": "Hello?"}
