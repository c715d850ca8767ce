"""ATIF from the conversation a row records (#43): rows without ``ng_trajectory`` (Gym's rollout
observability is off by default) convert with ``+relax=[recorded_conversations]`` from
``responses_create_params.input`` + ``response.output``, faithful or refused naming the row's
own field; a run that does record ``ng_trajectory`` is untouched by the option."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalexport.backends.atif.identity import RECORD_NAME
from tests.support import gym as gym_testing

AGENT = "aime24_math_tool_agent"
RELAX = "+relax=[recorded_conversations]"


def _atif(cli, rollouts: Path, output: Path, *extra: str):
    return cli(
        "atif",
        f"+rollouts_jsonl_fpath={rollouts}",
        f"+output_dirpath={output}",
        "+agent_version=1.0",
        *extra,
    )


def _tool_loop(row: dict) -> dict:
    """The row's answer after a reasoning item, a tool call and the tool's output, as Gym's
    tool agents record their loop in ``response.output``."""
    answer = row["response"]["output"][-1]
    row["response"]["output"] = [
        {
            "id": "rs_1",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Compute it with Python."}],
        },
        {
            "id": "fc_1",
            "type": "function_call",
            "call_id": "call_1",
            "name": "python",
            "arguments": '{"code": "print(7**2024 % 1000)"}',
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "801"},
        answer,
    ]
    return row


@pytest.fixture
def conversation_run(make_sample_run):
    """A run of one agent whose rows hold no ``ng_trajectory``, the first a tool loop."""
    sample = make_sample_run("conversations", agents=(AGENT,), trajectory=False, tasks=3, repeats=1)
    rows = [json.loads(line) for line in sample.rollouts.read_text().splitlines()]
    rows[0] = _tool_loop(rows[0])
    sample.rollouts.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return sample


def test_the_strict_refusal_names_the_option_and_the_option_converts_every_row(
    cli, conversation_run, tmp_path
) -> None:
    refused = _atif(cli, conversation_run.rollouts, tmp_path / "strict", "--json")
    message = json.loads(refused.stdout)["message"]
    assert "ng_trajectory: missing" in message
    assert message.endswith(
        "\nWith +relax=[recorded_conversations] every rejected row converts (beyond Gym's strict "
        "profile: each trajectory, relaxed.jsonl and the result say what it needed; "
        "docs/exporters/atif.md lists each option)."
    )
    inspected = cli("inspect", conversation_run.rollouts).stdout
    assert "with '+relax=[recorded_conversations]' it would accept every rollout" in inspected
    output = tmp_path / "atif"
    done = _atif(cli, conversation_run.rollouts, output, RELAX, "--json")
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded", result["message"]
    assert result["details"]["relaxation_counts"] == {"recorded_conversations": 3}
    relaxed = [json.loads(line) for line in (output / "relaxed.jsonl").read_text().splitlines()]
    assert [line["relaxations"] for line in relaxed] == [["recorded_conversations"]] * 3
    first = json.loads((output / "0-0.json").read_text())
    row = json.loads(conversation_run.rollouts.read_text().splitlines()[0])
    assert first["agent"] == {
        "name": AGENT,
        "version": "1.0",
        "model_name": row["response"]["model"],
    }
    assert [step["source"] for step in first["steps"]] == ["user", "agent", "agent"]
    call, answer = first["steps"][1], first["steps"][2]
    assert call["reasoning_content"] == "Compute it with Python."
    assert call["tool_calls"] == [
        {
            "tool_call_id": "call_1",
            "function_name": "python",
            "arguments": {"code": "print(7**2024 % 1000)"},
            "extra": {"nemo_gym": {"source_item_id": "fc_1"}},
        }
    ]
    assert call["observation"]["results"][0]["content"] == "801"
    assert answer["message"][0]["text"] == row["response"]["output"][-1]["content"][0]["text"]
    source = first["extra"]["nemo_gym"]["source"]
    assert source["format"] == "responses_conversation"
    assert source["reward"] == row["reward"]
    assert source["usage"] == row["response"]["usage"]
    assert first["final_metrics"]["total_prompt_tokens"] == row["response"]["usage"]["input_tokens"]
    assert first["extra"]["nemo_gym"]["conversion"]["status"] == "partial"


def test_the_files_are_byte_stable_run_to_run(cli, conversation_run, tmp_path) -> None:
    for name in ("a", "b"):
        assert _atif(cli, conversation_run.rollouts, tmp_path / name, RELAX).exit_code == 0
    first = {p.name: p.read_bytes() for p in (tmp_path / "a").iterdir()}
    assert first == {p.name: p.read_bytes() for p in (tmp_path / "b").iterdir()}


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            lambda output: output.pop(2),  # the tool's output, gone
            "response.output[0]: function results must match this turn's calls exactly; "
            "expected ['call_1'], got []",
        ),
        (
            lambda output: output.insert(0, {"type": "web_search_call", "id": "ws_1"}),
            "response.output[0].type: unsupported conversation item type 'web_search_call'",
        ),
        (
            lambda output: output.insert(
                3, {"type": "function_call_output", "call_id": "call_9", "output": "x"}
            ),
            "response.output[",
        ),
    ],
)
def test_what_cannot_be_said_faithfully_is_refused_naming_the_rows_own_item(
    cli, conversation_run, tmp_path, change, said
) -> None:
    rows = [json.loads(line) for line in conversation_run.rollouts.read_text().splitlines()]
    change(rows[0]["response"]["output"])
    conversation_run.rollouts.write_text("".join(json.dumps(row) + "\n" for row in rows))
    refused = _atif(cli, conversation_run.rollouts, tmp_path / "atif", RELAX, "--json")
    result = json.loads(refused.stdout)
    assert result["status"] == "failed"
    (rejected,) = result["details"]["rejected_rows"]
    assert rejected.startswith(f"line 1: {said}"), rejected
    assert not (tmp_path / "atif").exists()


def test_a_run_that_records_its_trajectories_is_untouched_by_the_option(
    cli, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run("recorded", agents=(AGENT,))
    assert _atif(cli, sample.rollouts, tmp_path / "strict").exit_code == 0
    assert _atif(cli, sample.rollouts, tmp_path / "relaxed", RELAX).exit_code == 0
    # Gym's files are the same; evalexport's record of each export names its options.
    strict = {p.name: p.read_bytes() for p in (tmp_path / "strict").iterdir()}
    relaxed = {p.name: p.read_bytes() for p in (tmp_path / "relaxed").iterdir()}
    assert strict.pop(RECORD_NAME) != relaxed.pop(RECORD_NAME)
    assert strict == relaxed


@pytest.mark.downloads
def test_every_conversation_built_trajectory_passes_harbors_validator(
    cli, conversation_run, tmp_path, harbor_validator
) -> None:
    output = tmp_path / "atif"
    assert _atif(cli, conversation_run.rollouts, output, RELAX).exit_code == 0
    for path in sorted(output.glob("*-*.json")):
        completed = harbor_validator(path)
        assert completed.returncode == 0, f"{path.name}: {completed.stdout}{completed.stderr}"


@pytest.mark.gym
@pytest.mark.parametrize(
    ("example", "converts"),
    [
        ("resources_servers/asr_with_pc/data/example_rollouts.jsonl", 5),
        ("resources_servers/structeval/data/example_rollouts.jsonl", 5),
        ("resources_servers/cvdp/data/example_rollouts.jsonl", 5),
        ("resources_servers/blackjack/data/example_rollouts.jsonl", 5),
        ("responses_api_agents/mini_swe_agent_2/data/example_rollouts.jsonl", 5),
    ],
)
def test_gyms_own_example_runs_convert_or_are_refused_naming_the_line_and_the_item(
    gym_oracle: gym_testing.GymOracle, tmp_path, example: str, converts: int
) -> None:
    """NeMo Gym 0.7.0's own example rollouts (none records ng_trajectory), every relaxation
    offered and +agent_name for rows that name no agent (cvdp's)."""
    from evalexport.backends.atif.files import convert_file
    from evalexport.trajectory.convert import TrajectoryIdentity
    from evalexport.trajectory.relaxations import RELAXATIONS

    rollouts = Path(gym_oracle.site_packages) / example
    identity = TrajectoryIdentity("gym-example", "1", agent_name="NAME")
    conversion = convert_file(rollouts, identity, output=None, relaxations=list(RELAXATIONS))
    assert conversion.converted == converts
    for rejected in conversion.rejected:
        line, _, reason = rejected.partition(": ")
        assert line.startswith("line ")
        assert reason.startswith(("response.output[", "responses_create_params.input[")), reason


def test_a_row_is_told_every_reason_and_inspect_names_what_no_option_gets_past(
    cli, conversation_run, tmp_path
) -> None:
    """#58: a row that names no agent and whose prompt held an image was refused for its
    agent alone; the image's reason came only after +relax=[unnamed_agents], and inspect said
    no relaxation was enough without saying why (a file part here: no relaxation takes it)."""
    rows = [json.loads(line) for line in conversation_run.rollouts.read_text().splitlines()]
    del rows[0]["agent_ref"]
    prompt = rows[0]["responses_create_params"]["input"]
    prompt[-1]["content"] = [
        {"type": "input_text", "text": "What is in the picture?"},
        {"type": "input_file", "file_id": "file-report-1"},
    ]
    conversation_run.rollouts.write_text("".join(json.dumps(row) + "\n" for row in rows))
    refused = json.loads(
        _atif(cli, conversation_run.rollouts, tmp_path / "a", RELAX, "--json").stdout
    )
    (rejected,) = refused["details"]["rejected_rows"]
    assert "content[1]: only text content parts are supported, got 'input_file'" in rejected
    assert "agent_ref: expected a non-empty agent_ref.name" in rejected
    inspected = cli("inspect", conversation_run.rollouts).stdout
    assert "with every gap allowed and every relaxation given, these remain:" in inspected
    assert "got 'input_file'" in inspected.split("these remain:")[1]
