"""Token IDs and log probabilities into ATIF step metrics, on request (``+relax=[token_ids]``,
#43): Gym's model servers put a generation's bundle on its last output item; ATIF v1.7's step
``Metrics`` hold ``prompt_token_ids``, ``completion_token_ids`` and ``logprobs``. Strict output
stays Gym's (the rows are refused); relaxed, every value round-trips; what ATIF cannot hold
(routed experts), a partial bundle and two generations in one step stay refused."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import atif
import pytest

from evalexport.testing.gym_shapes import AgentRun, ToolUse, generation_tokens, input_message
from evalexport.trajectory.convert import TrajectoryIdentity, convert_rollout
from evalexport.trajectory.steps import TrajectoryError
from tests.support.gym import GymOracle

IDENTITY = TrajectoryIdentity(session_id="s", agent_version="1.0")
RELAX = ["token_ids"]


def _row(*, token_ids: bool = True) -> dict[str, Any]:
    """Two model calls, each with its bundle on its last output item: a tool call after
    reasoning, then the answer."""
    run = AgentRun("0", "0-0", [input_message("user", "What is 7**2024 % 1000?")])
    run.turn(
        reasoning="Compute it.",
        tools=[ToolUse("python", {"code": "print(pow(7, 2024, 1000))"}, "801")],
        finish_reason="tool_calls",
        prompt_tokens=12,
        completion_tokens=5,
        cached_tokens=4,
        token_ids=token_ids,
    )
    run.turn(
        answer=["801"],
        finish_reason="stop",
        prompt_tokens=20,
        completion_tokens=3,
        cached_tokens=4,
        token_ids=token_ids,
    )
    return {
        "_ng_task_index": 0,
        "_ng_rollout_index": 0,
        "agent_ref": {"type": "responses_api_agents", "name": "simple_agent"},
        "ng_trajectory": run.record(resolved=True),
    }


def _agent_metrics(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [step.get("metrics", {}) for step in document["steps"] if step["source"] == "agent"]


def _refusal(row: dict[str, Any], relaxations: list[str] = RELAX) -> str:
    with pytest.raises(TrajectoryError) as refused:
        convert_rollout(row, IDENTITY, relaxations=relaxations)
    return str(refused.value)


@pytest.mark.gym
def test_gyms_model_takes_the_rows_with_token_ids(gym_oracle: GymOracle) -> None:
    assert gym_oracle.record_error(_row()["ng_trajectory"]) is None


def test_strict_output_refuses_token_ids_as_gym_does() -> None:
    assert (
        "outside the ATIF export profile (found: generation_log_probs, generation_token_ids, "
        "prompt_token_ids)" in _refusal(_row(), [])
    )


def test_each_generations_tokens_round_trip_into_its_steps_metrics() -> None:
    converted = convert_rollout(_row(), IDENTITY, relaxations=RELAX)
    assert converted.relaxations == ("token_ids",)
    document = converted.document
    atif.Trajectory.model_validate(document)
    first, second = _agent_metrics(document)
    assert first["prompt_token_ids"] == generation_tokens(1, 12, 5)["prompt_token_ids"]
    assert first["completion_token_ids"] == generation_tokens(1, 12, 5)["generation_token_ids"]
    assert first["logprobs"] == generation_tokens(1, 12, 5)["generation_log_probs"]
    assert second["completion_token_ids"] == generation_tokens(2, 20, 3)["generation_token_ids"]
    assert (first["prompt_tokens"], first["completion_tokens"]) == (12, 5)  # usage kept beside
    assert document["extra"]["nemo_gym"]["relaxations"] == ["token_ids"]


def test_rows_without_token_ids_convert_byte_for_byte_as_without_the_option() -> None:
    row = _row(token_ids=False)
    strict = convert_rollout(row, IDENTITY).document
    assert json.dumps(convert_rollout(row, IDENTITY, relaxations=RELAX).document) == json.dumps(
        strict
    )


def _last_item(row: dict[str, Any]) -> dict[str, Any]:
    return row["ng_trajectory"]["invocations"][0]["conversation"][-1]


@pytest.mark.parametrize(
    ("change", "refused"),
    [
        (
            lambda item: item.update(routed_experts=[[1, 2]]),
            "routed_experts: routed-expert metadata has no ATIF field",
        ),
        (
            lambda item: item.pop("generation_log_probs"),
            "partial token metadata; missing: generation_log_probs",
        ),
        (
            lambda item: item["generation_log_probs"].pop(),
            "3 generation token IDs but 2 log probabilities",
        ),
        (
            lambda item: item["prompt_token_ids"].append("7"),
            "prompt_token_ids: expected a list of integer token IDs",
        ),
        (
            lambda item: item["prompt_token_ids"].append(True),
            "prompt_token_ids: expected a list of integer token IDs",
        ),
    ],
    ids=["routed experts", "partial", "misaligned", "text id", "boolean id"],
)
def test_what_atif_cannot_hold_faithfully_stays_refused(change, refused: str) -> None:
    row = _row()
    item = _last_item(row)
    change(item)
    for turn in row["ng_trajectory"]["turns"]:  # the turn's copy of the answer too
        for copied in turn["answer"]:
            if copied.get("id") == item.get("id"):
                copied.clear()
                copied.update(copy.deepcopy(item))
    assert refused in _refusal(row)


def test_two_generations_in_one_step_are_refused_naming_both() -> None:
    row = _row()
    conversation = row["ng_trajectory"]["invocations"][0]["conversation"]
    reasoning = next(item for item in conversation if item["type"] == "reasoning")
    reasoning.update(generation_tokens(9, 2, 2))
    for turn in row["ng_trajectory"]["turns"]:
        for copied in turn["reasoning_content"] or []:
            copied.update(generation_tokens(9, 2, 2))
    message = _refusal(row)
    assert "a second generation's token IDs in one agent step" in message


def test_token_ids_on_a_user_message_are_refused() -> None:
    row = _row()
    prompt = row["ng_trajectory"]["invocations"][0]["conversation"][0]
    prompt.update(generation_tokens(3, 1, 1))
    for turn in row["ng_trajectory"]["turns"]:
        turn["question"][0].update(generation_tokens(3, 1, 1))
    assert "token IDs on a input message belong to no agent step" in _refusal(row)


def test_a_conversation_built_trajectory_carries_them_too() -> None:
    """A row without ng_trajectory: its response.output's items carry the bundles."""
    row = _row()
    record = row.pop("ng_trajectory")
    conversation = record["invocations"][0]["conversation"]
    row["responses_create_params"] = {"input": conversation[:1]}
    row["response"] = {
        "id": "resp_1",
        "status": "completed",
        "model": "m",
        "output": conversation[1:],
    }
    converted = convert_rollout(row, IDENTITY, relaxations=["recorded_conversations", "token_ids"])
    assert converted.relaxations == ("recorded_conversations", "token_ids")
    metrics = _agent_metrics(converted.document)
    assert [len(m["completion_token_ids"]) for m in metrics] == [5, 3]
    atif.Trajectory.model_validate(converted.document)


def test_the_cli_names_the_option_and_writes_the_metrics(cli, tmp_path: Path) -> None:
    rollouts = tmp_path / "run" / "math_rollouts.jsonl"
    rollouts.parent.mkdir()
    rollouts.write_text(json.dumps(_row()) + "\n")
    arguments = ["atif", f"+rollouts_jsonl_fpath={rollouts}", "+agent_version=1.0", "--json"]
    refused = json.loads(cli(*arguments, f"+output_dirpath={tmp_path / 'strict'}").stdout)
    assert refused["status"] == "failed"
    assert "With +relax=[token_ids] every rejected row converts" in refused["message"]
    output = tmp_path / "atif"
    done = json.loads(cli(*arguments, f"+output_dirpath={output}", "+relax=[token_ids]").stdout)
    assert done["status"] == "succeeded", done["message"]
    assert done["details"]["relaxation_counts"] == {"token_ids": 1}
    written = json.loads((output / "0-0.json").read_text())
    assert (
        _agent_metrics(written)[1]["logprobs"]
        == generation_tokens(2, 20, 3)["generation_log_probs"]
    )


def test_an_empty_bundle_writes_nothing() -> None:
    """#58: real rows carry ``[]`` bundles where nothing was recorded; the relaxation wrote
    empty arrays, which alone made a file non-reverifiable."""
    row = _row()
    for item in row["ng_trajectory"]["invocations"][0]["conversation"]:
        for field in ("prompt_token_ids", "generation_token_ids", "generation_log_probs"):
            if field in item:
                item[field] = []
    converted = convert_rollout(row, IDENTITY, relaxations=RELAX)
    assert converted.relaxations == ("token_ids",)  # the strict refusal was relaxed: recorded
    for metrics in _agent_metrics(converted.document):
        assert not {"prompt_token_ids", "completion_token_ids", "logprobs"} & set(metrics)
    atif.Trajectory.model_validate(converted.document)


@pytest.mark.gym
def test_gyms_reverify_ingress_refuses_token_metadata_as_the_docs_say(
    cli, gym_oracle: GymOracle, tmp_path: Path
) -> None:
    """docs/exporters/atif.md: Gym 0.7.0's reverify reads no token metadata (a step holding
    any is refused), so files for reverify leave ``+relax=[token_ids]`` out."""
    rollouts = tmp_path / "run" / "math_rollouts.jsonl"
    rollouts.parent.mkdir()
    rollouts.write_text(json.dumps(_row()) + "\n")
    output = tmp_path / "atif"
    arguments = ["atif", f"+rollouts_jsonl_fpath={rollouts}", "+agent_version=1.0", "--json"]
    done = json.loads(cli(*arguments, f"+output_dirpath={output}", "+relax=[token_ids]").stdout)
    assert done["status"] == "succeeded", done["message"]
    read = gym_oracle.reverify(output / "manifest.jsonl", rollouts)
    assert read["projected"] == []
    assert (
        "contains training token metadata that the initial reverify adapter does not "
        in (read["refused"]["0-0.json"])
    )
