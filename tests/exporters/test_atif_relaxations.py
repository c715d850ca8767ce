"""``atif`` with ``+relax``: relaxed rows are exported and say so everywhere; strict stays strict.

The rows are those of Gym's ``example_tool_call_multireward`` environment run by Gym's simple
agent (a developer prompt, a user question, reasoning, one ``get_weather`` call and its
output, the answer), built by :class:`AgentRun` as Gym records them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import atif
import pytest

from evalexport.testing.gym_shapes import AgentRun, ToolUse, input_message
from evalexport.trajectory.relaxations import RELAXATIONS
from tests.support import recorded_shapes
from tests.support.gym import GymOracle
from tests.support.harness_shapes import failed_trajectory, interleaved_trajectory
from tests.trajectory.strategies import edit_items
from tests.trajectory.test_token_ids import _row as token_row

CITIES = ("San Francisco", "New York", "Seattle")
DEVELOPER_PROMPT = (
    "You are a helpful assistant. When the user asks about the weather, respond with exactly "
    "one get_weather tool call and no other text."
)

GYM_MANIFEST_KEYS = ("_ng_rollout_index", "_ng_task_index", "expected_sha256", "trajectory_path")
"""The keys of Gym's ``AtifReverifyManifestEntry`` (``extra="forbid"``)."""


def _weather_row(task: int, city: str, *, developer: bool) -> dict[str, Any]:
    prompt = [input_message("user", f"what's the weather in {city}?")]
    if developer:
        prompt.insert(0, input_message("developer", DEVELOPER_PROMPT))
    run = AgentRun(str(task), f"{task}-0", prompt)
    weather = json.dumps({"city": city, "weather_description": f"The weather in {city} is sunny."})
    run.turn(
        reasoning="The user wants the weather; call get_weather.",
        tools=[ToolUse("get_weather", {"city": city}, weather)],
        finish_reason="tool_calls",
    )
    run.turn(answer=[f"The weather in {city} is sunny."], finish_reason="stop")
    return {
        "_ng_task_index": task,
        "_ng_rollout_index": 0,
        "agent_ref": {"type": "responses_api_agents", "name": "simple_agent"},
        "responses_create_params": {"input": prompt},
        "reward": 1.0,
        "ng_trajectory": run.record(resolved=True),
    }


def _weather_run(directory: Path) -> Path:
    """Two rows with a developer prompt (tasks 0 and 2) and one without (task 1)."""
    rollouts = directory / "weather_rollouts.jsonl"
    directory.mkdir(parents=True)
    rows = [_weather_row(task, city, developer=task != 1) for task, city in enumerate(CITIES)]
    rollouts.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return rollouts


@pytest.mark.gym
def test_the_rows_here_are_records_gyms_model_accepts(gym_oracle: GymOracle, tmp_path) -> None:
    rollouts = _weather_run(tmp_path / "run")
    for line in rollouts.read_text(encoding="utf-8").splitlines():
        assert gym_oracle.record_error(json.loads(line)["ng_trajectory"]) is None
    assert gym_oracle.record_error(_cut_short_row(3)["ng_trajectory"]) is None


def _atif(cli, rollouts: Path, output: Path, *extra: str):
    return cli(
        "atif",
        f"+rollouts_jsonl_fpath={rollouts}",
        f"+output_dirpath={output}",
        "+agent_version=1.0",
        *extra,
    )


def test_strict_export_refuses_developer_prompts_naming_the_option_that_accepts_them(
    cli, tmp_path
) -> None:
    rollouts = _weather_run(tmp_path / "run")
    run = _atif(cli, rollouts, tmp_path / "atif", "--json")
    assert run.exit_code == 1
    result = json.loads(run.stdout)
    assert result["details"]["rejected_rows"] == [
        f"line {line}: ng_trajectory.invocations[0].conversation[0].role: "
        "developer messages are not supported"
        for line in (1, 3)
    ]
    assert result["message"].endswith(
        "\nWith +relax=[developer_messages] every rejected row converts (beyond Gym's strict "
        "profile: each trajectory, relaxed.jsonl and the result say what it needed; "
        "docs/exporters/atif.md lists each option)."
    )
    assert not (tmp_path / "atif").exists()
    offered = _atif(cli, rollouts, tmp_path / "atif", "+relax=[developer_messages]")
    assert offered.exit_code == 0, offered.output  # the advice leads to an export that works


def test_relaxed_rows_are_exported_and_recorded_in_the_file_the_manifest_and_the_result(
    cli, tmp_path
) -> None:
    rollouts = _weather_run(tmp_path / "run")
    output = tmp_path / "atif"
    run = _atif(cli, rollouts, output, "+relax=[developer_messages]", "--json")
    assert run.exit_code == 0, run.output
    details = json.loads(run.stdout)["details"]
    assert details["trajectory_count"] == 3
    assert details["trajectories_relaxed"] == 2
    assert details["relaxation_counts"] == {"developer_messages": 2}
    manifest = [json.loads(line) for line in (output / "manifest.jsonl").read_text().splitlines()]
    assert {frozenset(entry) for entry in manifest} == {frozenset(GYM_MANIFEST_KEYS)}
    relaxed_lines = (output / "relaxed.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in relaxed_lines] == [
        {
            "trajectory_path": name,
            "_ng_task_index": task,
            "_ng_rollout_index": 0,
            "relaxations": ["developer_messages"],
        }
        for name, task in (("0-0.json", 0), ("2-0.json", 2))
    ]
    relaxed = json.loads((output / "0-0.json").read_text())
    atif.Trajectory.model_validate(relaxed)
    assert relaxed["steps"][0] == {
        "step_id": 1,
        "source": "system",
        "message": DEVELOPER_PROMPT,
        "extra": {"nemo_gym": {"source_role": "developer"}},
    }
    assert [step["source"] for step in relaxed["steps"]] == ["system", "user", "agent", "agent"]
    assert relaxed["extra"]["nemo_gym"]["relaxations"] == ["developer_messages"]
    assert relaxed["extra"]["nemo_gym"]["conversion"]["status"] == "partial"
    strict = json.loads((output / "1-0.json").read_text())
    assert "relaxations" not in strict["extra"]["nemo_gym"]
    assert strict["extra"]["nemo_gym"]["conversion"]["status"] == "complete"


@pytest.mark.gym
def test_gyms_reverify_ingress_reads_a_strict_and_a_relaxed_exports_manifest(
    cli, gym_oracle: GymOracle, tmp_path
) -> None:
    strict_run = tmp_path / "strict" / "weather_rollouts.jsonl"
    strict_run.parent.mkdir()
    relaxed_run = _weather_run(tmp_path / "relaxed")
    strict_run.write_text(relaxed_run.read_text().splitlines(keepends=True)[1], encoding="utf-8")
    assert _atif(cli, strict_run, tmp_path / "strict-atif").exit_code == 0
    run = _atif(cli, relaxed_run, tmp_path / "relaxed-atif", "+relax=[developer_messages]")
    assert run.exit_code == 0, run.output
    assert (tmp_path / "relaxed-atif" / "relaxed.jsonl").is_file()
    assert not (tmp_path / "strict-atif" / "relaxed.jsonl").exists()

    strict = gym_oracle.reverify(tmp_path / "strict-atif" / "manifest.jsonl", strict_run)
    assert strict == {
        "manifest_error": None,
        "entries": 1,
        "projected": ["1-0.json"],
        "refused": {},
    }
    relaxed = gym_oracle.reverify(tmp_path / "relaxed-atif" / "manifest.jsonl", relaxed_run)
    assert relaxed["manifest_error"] is None
    assert relaxed["entries"] == 3
    assert relaxed == strict | {
        "entries": 3,
        "projected": ["0-0.json", "1-0.json", "2-0.json"],
    }
    # Why the relaxations are not in the manifest: a line with a key of ours is refused.
    manifest = tmp_path / "relaxed-atif" / "manifest.jsonl"
    entry = json.loads(manifest.read_text().splitlines()[0])
    manifest.write_text(json.dumps(entry | {"relaxations": ["developer_messages"]}) + "\n")
    assert "relaxations" in gym_oracle.reverify(manifest, relaxed_run)["manifest_error"]


def test_rows_that_name_no_agent_are_named_by_agent_name_with_their_relaxation(
    cli, tmp_path
) -> None:
    rows = [_weather_row(task, city, developer=False) for task, city in enumerate(CITIES)]
    for row in rows:
        del row["agent_ref"]  # older Gym rows
    rollouts = tmp_path / "run" / "weather_rollouts.jsonl"
    rollouts.parent.mkdir()
    rollouts.write_text("".join(json.dumps(row) + "\n" for row in rows))
    output = tmp_path / "atif"
    strict = _atif(cli, rollouts, output, "--json")
    assert strict.exit_code == 1
    assert json.loads(strict.stdout)["details"]["rejected_rows"][0] == (
        "line 1: agent_ref: expected a non-empty agent_ref.name or environment server stamp; "
        "the row names no agent ('+relax=[unnamed_agents]' with +agent_name=NAME names it)"
    )
    inspected = cli("inspect", rollouts).stdout
    assert "with '+relax=[unnamed_agents]' +agent_name=NAME it would accept every rollout" in (
        inspected
    )
    alone = _atif(cli, rollouts, output, "+agent_name=weather")
    assert alone.exit_code == 1
    assert "+agent_name names it only with '+relax=[unnamed_agents]'" in alone.stdout
    without_name = _atif(cli, rollouts, output, "+relax=[unnamed_agents]")
    assert without_name.exit_code == 2
    assert "give +agent_name too" in without_name.stderr
    run = _atif(cli, rollouts, output, "+relax=[unnamed_agents]", "+agent_name=weather", "--json")
    assert run.exit_code == 0, run.output
    assert json.loads(run.stdout)["details"]["relaxation_counts"] == {"unnamed_agents": 3}
    document = json.loads((output / "0-0.json").read_text())
    assert document["agent"]["name"] == "weather"
    assert document["extra"]["nemo_gym"]["relaxations"] == ["unnamed_agents"]
    relaxed = [json.loads(line) for line in (output / "relaxed.jsonl").read_text().splitlines()]
    assert [entry["relaxations"] for entry in relaxed] == [["unnamed_agents"]] * 3


def test_an_unknown_relaxation_is_refused_naming_the_known_ones(cli, tmp_path) -> None:
    rollouts = _weather_run(tmp_path / "run")
    run = _atif(cli, rollouts, tmp_path / "atif", "+relax=[developer_prompts]")
    assert run.exit_code == 2
    assert "developer_prompts" in run.stderr
    assert "'developer_messages'" in run.stderr
    assert not (tmp_path / "atif").exists()


def test_inspect_names_the_relaxations_a_run_needs_and_how_many_rows_need_each(
    cli, tmp_path
) -> None:
    rollouts = _weather_run(tmp_path / "run")
    report = cli("inspect", rollouts).stdout
    assert "strict ATIF export: refuses 2 rollouts" in report
    assert "  with '+relax=[developer_messages]' it would accept every rollout" in report
    assert "    developer_messages: needed by 2 rollouts" in report
    data = json.loads(cli("inspect", rollouts, "--json").stdout)
    assert data["atif"]["relaxations_needed"] == {"developer_messages": 2}
    assert data["atif"]["accepted_with_gaps_allowed"] is None


def test_a_dry_run_with_relaxations_fails_and_succeeds_as_the_export_would(cli, tmp_path) -> None:
    rollouts = _weather_run(tmp_path / "run")
    strict = _atif(cli, rollouts, tmp_path / "a", "--dry-run", "--json")
    relaxed = _atif(
        cli, rollouts, tmp_path / "b", "+relax=[developer_messages]", "--dry-run", "--json"
    )
    assert (strict.exit_code, relaxed.exit_code) == (1, 0)
    assert json.loads(relaxed.stdout)["details"]["relaxation_counts"] == {"developer_messages": 2}
    assert not (tmp_path / "a").exists()
    assert not (tmp_path / "b").exists()


def _cut_short_row(task: int) -> dict[str, Any]:
    """A developer-prompted run whose tool failed, whose model reasoned silently, then in two
    summary parts, and whose last call (its answer in the ``final_answer`` phase) was cut by
    max_output_tokens."""
    prompt = [input_message("developer", DEVELOPER_PROMPT), input_message("user", "Weather?")]
    run = AgentRun(str(task), f"{task}-0", prompt)
    run.turn(
        reasoning="(silent)", tools=[ToolUse("get_weather", {"city": "Oslo"}, "error", "failed")]
    )
    run.turn(
        reasoning="(two parts)",
        answer=["It is"],
        finish_reason="length",
        response_status="incomplete",
    )
    record = run.record(status="incomplete", resolved=False)
    rollout = f"{task}-0"  # every copy of an item is edited, as its producer would write it
    edit_items(record, lambda item: item.get("id") == f"rs_{rollout}_1", summary=[])
    two_parts = [{"text": text, "type": "summary_text"} for text in ("Oslo.", "Sunny?")]
    edit_items(record, lambda item: item.get("id") == f"rs_{rollout}_2", summary=two_parts)
    edit_items(record, lambda item: item.get("id") == f"msg_{rollout}_2", phase="final_answer")
    return {"_ng_task_index": task, "ng_trajectory": record}


@pytest.mark.downloads
def test_every_relaxation_writes_files_harbors_validator_accepts(
    cli, tmp_path, harbor_validator
) -> None:
    rows = [
        _weather_row(0, "Lima", developer=True),
        {"_ng_task_index": 1, "ng_trajectory": interleaved_trajectory("1", "1-0")},
        {"_ng_task_index": 2, "ng_trajectory": failed_trajectory("2", "2-0")},
        _cut_short_row(3),
    ]
    for row in rows:
        row.update(_ng_rollout_index=0, agent_ref={"type": "responses_api_agents", "name": "a"})
    unnamed = _weather_row(4, "Quito", developer=False)
    del unnamed["agent_ref"]  # an older Gym row
    rows.append(unnamed)
    unrecorded = _weather_row(5, "Oslo", developer=False)  # rollout observability off
    record = unrecorded.pop("ng_trajectory")
    prompt = len(unrecorded["responses_create_params"]["input"])
    conversation = record["invocations"][0]["conversation"]
    unrecorded["response"] = {"id": "resp_5", "model": "m", "output": conversation[prompt:]}
    unrecorded["agent_ref"]["name"] = "a"
    rows.append(unrecorded)
    with_tokens = token_row()  # a generation's token IDs on its last output item
    with_tokens.update(_ng_task_index=6, agent_ref={"type": "responses_api_agents", "name": "a"})
    rows.append(with_tokens)
    # The shapes Gym's agents record without ng_trajectory (#58).
    shapes = (
        recorded_shapes.game_row,
        recorded_shapes.unanswered_call_row,
        recorded_shapes.image_row,
    )
    rows += [build(task) for task, build in enumerate(shapes, start=7)]
    rows.append(recorded_shapes.unindexed_row(recorded_shapes.transitions_row(0)))  # task 10
    for row in rows[7:]:
        row["agent_ref"]["name"] = "a"
    rollouts = tmp_path / "run" / "mixed_rollouts.jsonl"
    rollouts.parent.mkdir()
    rollouts.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    output = tmp_path / "atif"
    relax = f"+relax=[{','.join(RELAXATIONS)}]"
    run = _atif(cli, rollouts, output, relax, "+agent_name=a", "--json")
    assert run.exit_code == 0, run.output
    assert set(json.loads(run.stdout)["details"]["relaxation_counts"]) == set(RELAXATIONS)
    for path in sorted(output.glob("*-*.json")):
        atif.Trajectory.model_validate_json(path.read_bytes())
        completed = harbor_validator(path)
        assert completed.returncode == 0, f"{path.name}: {completed.stdout}{completed.stderr}"


def test_the_atif_reference_has_a_row_for_each_relaxation_in_order() -> None:
    reference = Path(__file__).resolve().parents[2] / "docs" / "exporters" / "atif.md"
    readme = reference.read_text(encoding="utf-8")
    rows = [line.split("`")[1] for line in readme.splitlines() if line.startswith("| `")]
    documented = [name for name in rows if name in RELAXATIONS]
    assert documented == sorted(RELAXATIONS)
